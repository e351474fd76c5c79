import type { UnitOfWork } from '../platform/db/unit-of-work';
import { purgeExpiredKeys } from './repository';

const DEFAULT_BATCH = 1000;

/** Deletes Idempotency-Keys past the replay window, one short transaction per batch, until none is left. */
export function createKeyPurger(deps: { uow: UnitOfWork }) {
  return {
    async purge(batchSize = DEFAULT_BATCH, onBatch: () => void = () => {}): Promise<{ purged: number }> {
      let purged = 0;
      for (;;) {
        const deleted = await deps.uow({}, (m) => purgeExpiredKeys(m, batchSize));
        purged += deleted;
        onBatch();
        if (deleted < batchSize) return { purged };
      }
    },
  };
}

export type KeyPurger = ReturnType<typeof createKeyPurger>;
