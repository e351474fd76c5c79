import type { MigrationInterface, QueryRunner } from 'typeorm';
import { workspaceRlsSql } from './rls';

/**
 * What each prompt wrote, keyed by its correlation id: it makes the persist step exactly-once under
 * Temporal's at-least-once activities, and tells the compensation exactly what to undo.
 */
export class Prompt1763780005000 implements MigrationInterface {
  name = 'Prompt1763780005000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE prompt_writes (
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  correlation_id uuid NOT NULL,
  node_ids uuid[] NOT NULL DEFAULT '{}',
  edge_ids uuid[] NOT NULL DEFAULT '{}',
  -- References this prompt added to nodes that existed before it: {node_id: count}.
  reference_deltas jsonb NOT NULL DEFAULT '{}',
  undone_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, correlation_id)
);`);
    await q.query(workspaceRlsSql('prompt_writes'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE prompt_writes`);
  }
}
