import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Issue 26 part 3, scheduled runs: a row per schedule (its Temporal Schedule is `run-schedule-<id>`),
 * and the schedule a run was dispatched by. `revision` counts changes, so a late apply of an older
 * definition to Temporal never overwrites a newer one (the Temporal Schedule's memo carries it).
 */
export class RunSchedules1763780011300 implements MigrationInterface {
  name = 'RunSchedules1763780011300';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE run_schedules (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  -- Exactly one of a cron expression and an interval in seconds.
  cron text,
  interval_seconds integer CHECK (interval_seconds > 0),
  timezone text NOT NULL DEFAULT 'UTC',
  run_template jsonb NOT NULL,
  overlap text NOT NULL CHECK (overlap IN ('skip', 'buffer_one', 'allow', 'cancel_other')),
  paused boolean NOT NULL DEFAULT false,
  note text,
  -- Whom the dispatched runs act as: the creator's (or last editor's) user, scopes and credential.
  principal jsonb NOT NULL,
  created_by uuid NOT NULL REFERENCES users(id),
  revision integer NOT NULL DEFAULT 1,
  -- The last action refused (the identity may no longer act), and when.
  last_refusal text,
  last_refused_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((cron IS NULL) <> (interval_seconds IS NULL))
);
CREATE INDEX run_schedules_recent_idx ON run_schedules (workspace_id, created_at DESC, id DESC);

-- No foreign key: a deleted schedule's runs stay and keep naming it.
ALTER TABLE run_executions ADD COLUMN schedule_id uuid;
CREATE INDEX run_executions_schedule_idx ON run_executions (workspace_id, schedule_id, created_at DESC, id DESC)
  WHERE schedule_id IS NOT NULL;
`);
    await q.query(workspaceRlsSql('run_schedules'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP INDEX IF EXISTS run_executions_schedule_idx;
ALTER TABLE run_executions DROP COLUMN IF EXISTS schedule_id;
`);
    await q.query(dropWorkspaceRlsSql('run_schedules'));
    await q.query(`DROP TABLE run_schedules`);
  }
}
