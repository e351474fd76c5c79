import type { EntityManager } from 'typeorm';
import { readOntologyConfig } from '../ontology-config/service';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { rescoreLiveNodes } from './repository';

/**
 * The nightly decay for the transaction's workspace: every live node's importance is recomputed
 * from the formula (contract 2.7) with the workspace's settings. Recomputing rather than
 * multiplying the stored score keeps a retried or repeated run from decaying twice.
 */
export async function decayImportance(m: EntityManager): Promise<{ updated: number }> {
  const { importance } = await readOntologyConfig(m);
  return { updated: await rescoreLiveNodes(m, importance) };
}

export function createImportanceService(deps: { uow: UnitOfWork }) {
  return {
    decayWorkspace: (workspaceId: string) => deps.uow({ workspaceId }, decayImportance),
  };
}

export type ImportanceService = ReturnType<typeof createImportanceService>;
