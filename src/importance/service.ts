import type { EntityManager } from 'typeorm';
import { readOntologyConfig } from '../ontology-config/service';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { importanceSql, importanceSqlParams } from './formula';

/**
 * The nightly decay for the transaction's workspace: every live node's importance is recomputed
 * from the formula (contract 2.7) with the workspace's settings. Recomputing rather than
 * multiplying the stored score keeps a retried or repeated run from decaying twice. Rows whose
 * score does not move are left alone: an UPDATE rewrites the row's 2 KB vector and its HNSW entry.
 */
export async function decayImportance(m: EntityManager): Promise<{ updated: number }> {
  const { importance } = await readOntologyConfig(m);
  const [row]: { updated: number }[] = await m.query(
    `WITH scored AS (
       SELECT n.id, ${importanceSql(1)} AS score FROM nodes n WHERE NOT n.is_deleted),
     changed AS (
       UPDATE nodes n SET importance_score = scored.score FROM scored
       WHERE n.id = scored.id AND abs(n.importance_score - scored.score) > 1e-7 RETURNING 1)
     SELECT count(*)::int AS updated FROM changed`,
    importanceSqlParams(importance),
  );
  return row!;
}

export function createImportanceService(deps: { uow: UnitOfWork }) {
  return {
    decayWorkspace: (workspaceId: string) => deps.uow({ workspaceId }, decayImportance),
  };
}

export type ImportanceService = ReturnType<typeof createImportanceService>;
