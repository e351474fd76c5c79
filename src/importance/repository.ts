import type { EntityManager } from 'typeorm';
import type { ImportanceSettings } from '../ontology-config/schemas';
import { queryFirst } from '../platform/db/query';
import { importanceSql, importanceSqlParams } from './formula';

export interface RescoredPage {
  /** Live nodes read in this page. */
  scanned: number;
  /** Of those, how many scores moved. */
  updated: number;
  /** The page's last node id (the next page starts after it); null for an empty page. */
  last: string | null;
}

/**
 * Recomputes the importance of one page of the transaction's workspace's live nodes, in id order
 * after `after`, with the formula. Rows whose score does not move are left alone: an UPDATE
 * rewrites the row's 2 KB vector and its HNSW entry. Raw: a set-based UPDATE over the formula.
 */
export async function rescoreLiveNodes(
  m: EntityManager,
  settings: ImportanceSettings,
  page: { after: string | null; limit: number },
): Promise<RescoredPage> {
  const row = await queryFirst<RescoredPage>(
    m,
    `WITH page AS MATERIALIZED (
       SELECT n.id, n.importance_score AS current, ${importanceSql(3)} AS score
       FROM nodes n WHERE NOT n.is_deleted AND ($1::uuid IS NULL OR n.id > $1::uuid)
       ORDER BY n.id LIMIT $2),
     changed AS (
       UPDATE nodes n SET importance_score = page.score FROM page
       WHERE n.id = page.id AND abs(page.current - page.score) > 1e-7 RETURNING 1)
     SELECT (SELECT count(*) FROM page)::int AS scanned, (SELECT count(*) FROM changed)::int AS updated,
       (SELECT id FROM page ORDER BY id DESC LIMIT 1) AS last`,
    [page.after, page.limit, ...importanceSqlParams(settings)],
  );
  return row ?? { scanned: 0, updated: 0, last: null };
}
