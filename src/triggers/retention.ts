import type { EntityManager } from 'typeorm';
import { deleteInBatches } from '../platform/db/delete-in-batches';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { LIMITS } from '../rules/limits';
import { purgeDeliveries } from './repository';

/** Deletes delivery records past retention, one short transaction per batch, until none is left. */
export function createDeliveryRetention(deps: { uow: UnitOfWork }) {
  return {
    async sweep(batchSize: number = LIMITS.webhook.retentionBatch, onBatch?: () => void): Promise<{ deleted: number }> {
      const purge = (m: EntityManager, size: number) => purgeDeliveries(m, LIMITS.webhook.retentionDays, size);
      return { deleted: await deleteInBatches(deps.uow, batchSize, purge, onBatch) };
    },
  };
}

export type DeliveryRetention = ReturnType<typeof createDeliveryRetention>;
