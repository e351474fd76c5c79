import { deleteInBatches } from '../platform/db/delete-in-batches';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { purgeExpiredKeys } from './repository';

const DEFAULT_BATCH = 1000;

/** Deletes Idempotency-Keys past the replay window, one short transaction per batch, until none is left. */
export function createKeyPurger(deps: { uow: UnitOfWork }) {
  return {
    purge: (batchSize = DEFAULT_BATCH, onBatch?: () => void): Promise<number> =>
      deleteInBatches(deps.uow, batchSize, purgeExpiredKeys, onBatch),
  };
}

export type KeyPurger = ReturnType<typeof createKeyPurger>;
