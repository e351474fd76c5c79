import { deleteInBatches } from '../platform/db/delete-in-batches';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { pruneVersions, purgeCalls } from './repository';

const DEFAULT_BATCH = 1000;

/**
 * The connectors' share of the hourly maintenance pass (the capability-key purge, activities/agents.ts),
 * in every workspace, one short transaction per batch: the call ledger's rows past the 24-hour replay
 * window, and the kept tool-list versions older than their connector's current one that no unfinished
 * run started with.
 */
export function createConnectorUpkeep(deps: { uow: UnitOfWork }) {
  return {
    purge: async (batchSize = DEFAULT_BATCH, onBatch?: () => void) => ({
      calls: await deleteInBatches(deps.uow, batchSize, purgeCalls, onBatch),
      versions: await deleteInBatches(deps.uow, batchSize, pruneVersions, onBatch),
    }),
  };
}

export type ConnectorUpkeep = ReturnType<typeof createConnectorUpkeep>;
