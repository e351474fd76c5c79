import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Structural search reads the most recent and the most important nodes of a workspace and scores
 * them from last_touch_at and importance_score alone. With 512 floats stored inline a node row
 * fills a quarter of a page, so reading those lists from the heap cost more than the scoring;
 * covering indexes make them index-only scans, and only the k winners are read from the heap.
 */
export class SearchCovering1763780007300 implements MigrationInterface {
  name = 'SearchCovering1763780007300';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
DROP INDEX IF EXISTS nodes_workspace_recency_idx, nodes_workspace_type_recency_idx, nodes_workspace_type_importance_idx;
CREATE INDEX nodes_workspace_recency_idx ON nodes (workspace_id, last_touch_at DESC)
  INCLUDE (importance_score, id, type) WHERE NOT is_deleted;
CREATE INDEX nodes_workspace_rank_importance_idx ON nodes (workspace_id, importance_score DESC)
  INCLUDE (last_touch_at, id, type) WHERE NOT is_deleted;
CREATE INDEX nodes_workspace_type_recency_idx ON nodes (workspace_id, type, last_touch_at DESC)
  INCLUDE (importance_score, id) WHERE NOT is_deleted;
CREATE INDEX nodes_workspace_type_importance_idx ON nodes (workspace_id, type, importance_score DESC)
  INCLUDE (last_touch_at, id) WHERE NOT is_deleted;
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP INDEX IF EXISTS nodes_workspace_recency_idx, nodes_workspace_rank_importance_idx, nodes_workspace_type_recency_idx,
  nodes_workspace_type_importance_idx;
CREATE INDEX nodes_workspace_recency_idx ON nodes (workspace_id, last_touch_at DESC) WHERE NOT is_deleted;
CREATE INDEX nodes_workspace_type_recency_idx ON nodes (workspace_id, type, last_touch_at DESC) WHERE NOT is_deleted;
CREATE INDEX nodes_workspace_type_importance_idx ON nodes (workspace_id, type, importance_score DESC)
  WHERE NOT is_deleted;
`);
  }
}
