import { deleteInBatches } from '../platform/db/delete-in-batches';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { LIMITS } from '../rules/limits';
import { purgeCodeBatches } from './batches-repository';

/**
 * Deletes stored code-index batches past LIMITS.code.batchRetentionHours (their result only
 * answers an apply retried meanwhile), one short transaction per batch, until none is left. The
 * hourly capability-key purge runs it after the keys (activities/agents.ts).
 */
export function createCodeBatchPurger(deps: { uow: UnitOfWork }) {
  return {
    purge: (batchSize: number = LIMITS.code.batchPurgeRows, onBatch?: () => void): Promise<number> =>
      deleteInBatches(deps.uow, batchSize, purgeCodeBatches, onBatch),
  };
}

export type CodeBatchPurger = ReturnType<typeof createCodeBatchPurger>;
