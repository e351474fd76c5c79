import { defineWorkflow } from '../platform/temporal/contract';

export interface KeyPurgeInput {
  /** Keys deleted per transaction. */
  batchSize?: number;
}

/** Hourly (a schedule): deletes Idempotency-Keys past the 24-hour replay window, in every workspace. */
export const capabilityKeyPurgeWorkflow = defineWorkflow<[KeyPurgeInput], { purged: number }>({
  type: 'capabilityKeyPurgeWorkflow',
  id: () => 'capability-key-purge',
});
