import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Code batches stored by the API (review M-1): `codeIndexWorkflow` carries the row's id, not the
 * batch, so its input is an id Weft issued and not data to trust. The activity applies the row once,
 * then keeps only its result (a retry whose completion was lost answers it again).
 */
export class CodeIndexBatches1763780010010 implements MigrationInterface {
  name = 'CodeIndexBatches1763780010010';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE code_index_batches (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  repo text NOT NULL,
  -- The ingest request; NULL once applied.
  batch jsonb,
  result jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  applied_at timestamptz
);
CREATE INDEX code_index_batches_workspace_idx ON code_index_batches (workspace_id, created_at);
${workspaceRlsSql('code_index_batches')}
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
${dropWorkspaceRlsSql('code_index_batches')}
DROP TABLE IF EXISTS code_index_batches;
`);
  }
}
