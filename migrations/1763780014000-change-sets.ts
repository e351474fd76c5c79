import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Staged change-sets (issue 31 part 4): what an update prompt or an agent's write would have
 * written, kept for a reviewer instead. The row is its own approval (`approval_id`, listed by
 * `GET /v1/approvals` beside the runs'); `operations` are the proposed nodes, edges and property
 * changes (each with the value seen at staging), `conflicts` what the apply found changed since.
 * `workspace_settings.staging` holds the workspace's switches (src/ontology-config/schemas.ts).
 */
export class ChangeSets1763780014000 implements MigrationInterface {
  name = 'ChangeSets1763780014000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE change_sets (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  approval_id uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  status text NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'applied', 'rejected', 'conflicted', 'withdrawn')),
  source_kind text NOT NULL CHECK (source_kind IN ('prompt', 'capability')),
  -- The prompt's correlation id, or the capability's name and the call's Idempotency-Key.
  source_prompt_id uuid,
  source_capability text,
  source_call text,
  operations jsonb NOT NULL,
  staged_by uuid NOT NULL REFERENCES users(id),
  staged_by_credential jsonb NOT NULL,
  resolved_by uuid REFERENCES users(id),
  resolved_by_credential jsonb,
  notes text,
  conflicts jsonb,
  -- The ids the apply wrote or referenced: {node_ids, edge_ids}.
  applied jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  resolved_at timestamptz
);
-- One change-set per prompt: a retried persist finds it.
CREATE UNIQUE INDEX change_sets_prompt_idx ON change_sets (workspace_id, source_prompt_id)
  WHERE source_prompt_id IS NOT NULL;
CREATE INDEX change_sets_list_idx ON change_sets (workspace_id, status, created_at DESC, id DESC);
ALTER TABLE workspace_settings ADD COLUMN staging jsonb NOT NULL DEFAULT '{}';
`);
    await q.query(workspaceRlsSql('change_sets'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(dropWorkspaceRlsSql('change_sets'));
    await q.query(`DROP TABLE change_sets; ALTER TABLE workspace_settings DROP COLUMN staging;`);
  }
}
