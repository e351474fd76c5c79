import { purgeCodeBatches } from '../code/batches';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { purgeExpiredKeys } from './repository';

const DEFAULT_BATCH = 1000;

/**
 * Deletes Idempotency-Keys past the replay window, then stored code-index batches past their day
 * (their result only answers an apply retried meanwhile), one short transaction per batch, until
 * none is left.
 */
export function createKeyPurger(deps: { uow: UnitOfWork }) {
  return {
    async purge(
      batchSize = DEFAULT_BATCH,
      onBatch: () => void = () => {},
    ): Promise<{ purged: number; codeBatches: number }> {
      const drain = async (purgeOne: typeof purgeExpiredKeys) => {
        let total = 0;
        for (;;) {
          const deleted = await deps.uow({}, (m) => purgeOne(m, batchSize));
          total += deleted;
          onBatch();
          if (deleted < batchSize) return total;
        }
      };
      const purged = await drain(purgeExpiredKeys);
      return { purged, codeBatches: await drain(purgeCodeBatches) };
    },
  };
}

export type KeyPurger = ReturnType<typeof createKeyPurger>;
