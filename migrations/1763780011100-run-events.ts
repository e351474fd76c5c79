import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Issue 26 part 1: each run's event log, written in the transaction of the change it reports
 * (src/runs/run-events.ts). `id` is per run and counts up from 1 (the run row's `last_event_id`
 * hands the numbers out under the run's row lock); `seq` orders the workspace's stream. An event
 * names the audit link it corresponds to (`audit_own`) or, for the others, the chain's head when
 * it was written, so every event can be checked against the verified chain.
 */
export class RunEvents1763780011100 implements MigrationInterface {
  name = 'RunEvents1763780011100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE run_executions ADD COLUMN last_event_id integer NOT NULL DEFAULT 0;

CREATE TABLE run_events (
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  execution_id uuid NOT NULL,
  id integer NOT NULL CHECK (id > 0),
  seq bigint GENERATED ALWAYS AS IDENTITY,
  type text NOT NULL CHECK (type IN ('run.status', 'step.started', 'step.completed', 'step.failed',
    'approval.requested', 'approval.resolved', 'decision.recorded', 'run.finished')),
  data jsonb NOT NULL,
  audit_seq integer,
  audit_hash char(64),
  audit_own boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (execution_id, id),
  FOREIGN KEY (workspace_id, execution_id) REFERENCES run_executions (workspace_id, id)
);
-- The workspace stream's replay (Last-Event-ID) reads by seq.
CREATE INDEX run_events_workspace_seq_idx ON run_events (workspace_id, seq);
`);
    await q.query(workspaceRlsSql('run_events'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(dropWorkspaceRlsSql('run_events'));
    await q.query(`DROP TABLE run_events; ALTER TABLE run_executions DROP COLUMN last_event_id;`);
  }
}
