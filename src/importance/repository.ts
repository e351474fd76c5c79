import type { EntityManager } from 'typeorm';
import type { ImportanceSettings } from '../ontology-config/schemas';
import { queryFirst } from '../platform/db/query';
import { importanceSql, importanceSqlParams } from './formula';

/**
 * Recomputes the importance of every live node of the transaction's workspace with the formula
 * and answers how many scores moved. Rows whose score does not move are left alone: an UPDATE
 * rewrites the row's 2 KB vector and its HNSW entry. Raw: a set-based UPDATE over the formula.
 */
export async function rescoreLiveNodes(m: EntityManager, settings: ImportanceSettings): Promise<number> {
  const row = await queryFirst<{ updated: number }>(
    m,
    `WITH scored AS (
       SELECT n.id, ${importanceSql(1)} AS score FROM nodes n WHERE NOT n.is_deleted),
     changed AS (
       UPDATE nodes n SET importance_score = scored.score FROM scored
       WHERE n.id = scored.id AND abs(n.importance_score - scored.score) > 1e-7 RETURNING 1)
     SELECT count(*)::int AS updated FROM changed`,
    importanceSqlParams(settings),
  );
  return row?.updated ?? 0;
}
