import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 26 parts 4 and 5: a run's tags (GIN-indexed for `GET /v1/runs?tag=`), its concurrency key
 * with the limit and policy it was dispatched with, the start it holds back while it waits for a
 * slot (`held_start`, the `run.dispatched` payload enqueued when one frees), the order it asked
 * for one in (`dispatch_seq`, drawn under the key's lock), and the run a rerun repeats (with that
 * run's chain head at the time, which the rerun's first audit link names). A reused step points at
 * the step whose output it copied. No new table: the runs' row-level security covers the columns.
 */
export class RunControl1763780011400 implements MigrationInterface {
  name = 'RunControl1763780011400';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE run_executions
  ADD COLUMN tags text[] NOT NULL DEFAULT '{}',
  ADD COLUMN concurrency_key text,
  ADD COLUMN concurrency_limit integer CHECK (concurrency_limit > 0),
  ADD COLUMN concurrency_policy text CHECK (concurrency_policy IN ('reject', 'enqueue', 'cancel_previous')),
  ADD COLUMN held_start jsonb,
  ADD COLUMN dispatch_seq bigserial,
  ADD COLUMN rerun_of uuid,
  ADD COLUMN rerun_of_head_hash char(64),
  ADD COLUMN rerun_from_step integer,
  ADD CONSTRAINT run_executions_rerun_of_fk FOREIGN KEY (workspace_id, rerun_of)
    REFERENCES run_executions (workspace_id, id),
  ADD CONSTRAINT run_executions_concurrency_check
    CHECK ((concurrency_key IS NULL) = (concurrency_limit IS NULL)
      AND (concurrency_key IS NULL) = (concurrency_policy IS NULL));
CREATE INDEX run_executions_tags_idx ON run_executions USING gin (tags);
-- The active and waiting runs of a key: what a dispatch counts and a finishing run releases to.
CREATE INDEX run_executions_concurrency_idx ON run_executions (workspace_id, concurrency_key, dispatch_seq)
  WHERE concurrency_key IS NOT NULL AND status IN ('QUEUED', 'RUNNING', 'AWAITING_APPROVAL');
CREATE INDEX run_executions_rerun_of_idx ON run_executions (rerun_of) WHERE rerun_of IS NOT NULL;

ALTER TABLE run_steps ADD COLUMN reused_from_step_id uuid REFERENCES run_steps(id);

ALTER TABLE run_audit DROP CONSTRAINT IF EXISTS run_audit_kind_check;
ALTER TABLE run_audit ADD CONSTRAINT run_audit_kind_check CHECK (kind IN ('TOOL', 'APPROVAL', 'DECISION', 'RERUN'));
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DELETE FROM run_audit WHERE kind = 'RERUN';
ALTER TABLE run_audit DROP CONSTRAINT IF EXISTS run_audit_kind_check;
ALTER TABLE run_audit ADD CONSTRAINT run_audit_kind_check CHECK (kind IN ('TOOL', 'APPROVAL', 'DECISION'));
ALTER TABLE run_steps DROP COLUMN IF EXISTS reused_from_step_id;
DROP INDEX IF EXISTS run_executions_rerun_of_idx;
DROP INDEX IF EXISTS run_executions_concurrency_idx;
DROP INDEX IF EXISTS run_executions_tags_idx;
ALTER TABLE run_executions
  DROP CONSTRAINT IF EXISTS run_executions_concurrency_check,
  DROP CONSTRAINT IF EXISTS run_executions_rerun_of_fk,
  DROP COLUMN IF EXISTS rerun_from_step,
  DROP COLUMN IF EXISTS rerun_of_head_hash,
  DROP COLUMN IF EXISTS rerun_of,
  DROP COLUMN IF EXISTS dispatch_seq,
  DROP COLUMN IF EXISTS held_start,
  DROP COLUMN IF EXISTS concurrency_policy,
  DROP COLUMN IF EXISTS concurrency_limit,
  DROP COLUMN IF EXISTS concurrency_key,
  DROP COLUMN IF EXISTS tags;
`);
  }
}
