import { defineWorkflow } from '../platform/temporal/contract';

export interface KeyPurgeInput {
  /** Keys deleted per transaction. */
  batchSize?: number;
}

/**
 * Keys purged (`purged`), stored code-index batches older than a day (`codeBatches`), connector call
 * ledger rows past the replay window (`connectorCalls`) and unpinned old connector versions (`connectorVersions`).
 */
export interface KeyPurgeResult {
  purged: number;
  codeBatches: number;
  connectorCalls: number;
  connectorVersions: number;
}

/**
 * Hourly (a schedule): deletes Idempotency-Keys past the 24-hour replay window, then stored
 * code-index batches older than LIMITS.code.batchRetentionHours, then the connectors' expired call
 * ledger rows and the old tool-list versions no unfinished run keeps, in every workspace.
 */
export const capabilityKeyPurgeWorkflow = defineWorkflow<[KeyPurgeInput], KeyPurgeResult>({
  type: 'capabilityKeyPurgeWorkflow',
  id: () => 'capability-key-purge',
});
