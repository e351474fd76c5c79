import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Indexes for search (knowledge-graph-service-api.md §4.1, rules 2 and 5). Structural candidates are the union of the
 * most recent and the most important live nodes (optionally per type); these indexes let both lists
 * be read in order instead of scoring every node of the workspace. Vector search uses the
 * foundation's HNSW index. No new table, so no RLS policy to add.
 */
export class Search1763780004000 implements MigrationInterface {
  name = 'Search1763780004000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE INDEX nodes_workspace_recency_idx ON nodes (workspace_id, last_touch_at DESC) WHERE NOT is_deleted;
CREATE INDEX nodes_workspace_type_recency_idx ON nodes (workspace_id, type, last_touch_at DESC) WHERE NOT is_deleted;
CREATE INDEX nodes_workspace_type_importance_idx ON nodes (workspace_id, type, importance_score DESC)
  WHERE NOT is_deleted;
-- Nodes still waiting for a vector: the backfill pass finds them without scanning the workspace.
CREATE INDEX nodes_unembedded_idx ON nodes (workspace_id, created_at) WHERE embedding IS NULL AND NOT is_deleted;
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP INDEX IF EXISTS nodes_workspace_recency_idx, nodes_workspace_type_recency_idx,
  nodes_workspace_type_importance_idx, nodes_unembedded_idx;
`);
  }
}
