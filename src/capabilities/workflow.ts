import { defineWorkflow } from '../platform/temporal/contract';

export interface KeyPurgeInput {
  /** Keys deleted per transaction. */
  batchSize?: number;
}

/** Keys purged (`purged`) and stored code-index batches older than a day (`codeBatches`). */
export interface KeyPurgeResult {
  purged: number;
  codeBatches: number;
}

/**
 * Hourly (a schedule): deletes Idempotency-Keys past the 24-hour replay window, then stored
 * code-index batches older than LIMITS.code.batchRetentionHours, in every workspace.
 */
export const capabilityKeyPurgeWorkflow = defineWorkflow<[KeyPurgeInput], KeyPurgeResult>({
  type: 'capabilityKeyPurgeWorkflow',
  id: () => 'capability-key-purge',
});
