import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 40 item 2: a run a step started (`runs.dispatch` inside a run) is a child. It names its
 * parent and the root of its tree (the parent's root, or the parent), and its depth below that root
 * (0 for a run nobody's step started), which `LIMITS.runs.maxDepth` bounds. `GET /v1/runs?parent=`
 * and a parent's cancel (which cancels its unfinished descendants) read the parent index. No new
 * table: the runs' row-level security covers the columns.
 */
export class RunChildren1763780018500 implements MigrationInterface {
  name = 'RunChildren1763780018500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE run_executions
  ADD COLUMN parent_execution_id uuid,
  ADD COLUMN root_execution_id uuid,
  ADD COLUMN depth integer NOT NULL DEFAULT 0 CHECK (depth >= 0),
  ADD CONSTRAINT run_executions_parent_fk FOREIGN KEY (workspace_id, parent_execution_id)
    REFERENCES run_executions (workspace_id, id),
  ADD CONSTRAINT run_executions_root_fk FOREIGN KEY (workspace_id, root_execution_id)
    REFERENCES run_executions (workspace_id, id),
  ADD CONSTRAINT run_executions_lineage_check
    CHECK ((parent_execution_id IS NULL) = (root_execution_id IS NULL)
      AND (parent_execution_id IS NULL) = (depth = 0));
CREATE INDEX run_executions_parent_idx ON run_executions (parent_execution_id, created_at DESC, id DESC)
  WHERE parent_execution_id IS NOT NULL;
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP INDEX IF EXISTS run_executions_parent_idx;
ALTER TABLE run_executions
  DROP CONSTRAINT IF EXISTS run_executions_lineage_check,
  DROP CONSTRAINT IF EXISTS run_executions_root_fk,
  DROP CONSTRAINT IF EXISTS run_executions_parent_fk,
  DROP COLUMN IF EXISTS depth,
  DROP COLUMN IF EXISTS root_execution_id,
  DROP COLUMN IF EXISTS parent_execution_id;
`);
  }
}
