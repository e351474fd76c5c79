import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 43 item 2, flow control on runs (`src/runs/flow.ts`): a run's throttle, rate-limit and
 * debounce keys; `flow_hold` says which of them holds a QUEUED run's start back (in `held_start`, as
 * a concurrency key's waiting run does; a throttled run's is cleared when it starts, so `throttle_key`
 * with a null `flow_hold` is a start that counts); `flow_start_at` is when the run starts (a throttled
 * run's planned start, then its actual one; a debounced run's deadline, which later dispatches push out).
 */
export class RunFlow1763780021500 implements MigrationInterface {
  name = 'RunFlow1763780021500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE run_executions
  ADD COLUMN throttle_key text,
  ADD COLUMN throttle_limit integer,
  ADD COLUMN throttle_period_seconds integer,
  ADD COLUMN rate_limit_key text,
  ADD COLUMN debounce_key text,
  ADD COLUMN flow_hold text CHECK (flow_hold IN ('throttle', 'debounce')),
  ADD COLUMN flow_start_at timestamptz`);
    await q.query(`CREATE INDEX run_executions_throttle_idx
  ON run_executions (workspace_id, throttle_key, flow_start_at) WHERE throttle_key IS NOT NULL`);
    await q.query(`CREATE INDEX run_executions_rate_limit_idx
  ON run_executions (workspace_id, rate_limit_key, created_at) WHERE rate_limit_key IS NOT NULL`);
    await q.query(`CREATE INDEX run_executions_debounce_idx ON run_executions (workspace_id, debounce_key, dispatch_seq)
  WHERE debounce_key IS NOT NULL AND held_start IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS run_executions_debounce_idx`);
    await q.query(`DROP INDEX IF EXISTS run_executions_rate_limit_idx`);
    await q.query(`DROP INDEX IF EXISTS run_executions_throttle_idx`);
    await q.query(`
ALTER TABLE run_executions
  DROP COLUMN flow_start_at, DROP COLUMN flow_hold, DROP COLUMN debounce_key, DROP COLUMN rate_limit_key,
  DROP COLUMN throttle_period_seconds, DROP COLUMN throttle_limit, DROP COLUMN throttle_key`);
  }
}
