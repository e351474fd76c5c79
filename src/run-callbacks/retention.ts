import type { UnitOfWork } from '../platform/db/unit-of-work';
import { LIMITS } from '../rules/limits';
import { purgeDeliveries } from './repository';

/** Deletes settled callback deliveries past retention, one short transaction per batch, until none is left. */
export function createCallbackRetention(deps: { uow: UnitOfWork }) {
  return {
    async sweep(
      batchSize: number = LIMITS.runCallbacks.retentionBatch,
      onBatch: () => void = () => {},
    ): Promise<{ deleted: number }> {
      let deleted = 0;
      for (;;) {
        const batch = await deps.uow({}, (m) => purgeDeliveries(m, LIMITS.runCallbacks.retentionDays, batchSize));
        deleted += batch;
        onBatch();
        if (batch < batchSize) return { deleted };
      }
    },
  };
}

export type CallbackRetention = ReturnType<typeof createCallbackRetention>;
