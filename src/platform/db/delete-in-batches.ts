import type { EntityManager } from 'typeorm';
import type { UnitOfWork } from './unit-of-work';

/**
 * Runs `deleteBatch` (which deletes at most `batchSize` rows and answers how many it did) in one
 * short transaction after another until a batch comes back short; the total deleted. `onBatch`
 * after each (an activity's heartbeat). For purges across every workspace, which their definer
 * functions scope themselves.
 */
export async function deleteInBatches(
  uow: UnitOfWork,
  batchSize: number,
  deleteBatch: (m: EntityManager, batchSize: number) => Promise<number>,
  onBatch: () => void = () => {},
): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await uow({}, (m) => deleteBatch(m, batchSize));
    total += deleted;
    onBatch();
    if (deleted < batchSize) return total;
  }
}
