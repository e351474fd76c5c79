import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

const STATUSES = `'QUEUED', 'RUNNING', 'AWAITING_APPROVAL', 'SUCCEEDED', 'FAILED', 'CANCELLED'`;
const EVENT_TYPES = `'run.status', 'step.started', 'step.completed', 'step.failed', 'approval.requested',
    'approval.resolved', 'decision.recorded', 'run.finished', 'approval.voted', 'approval.escalated'`;

/**
 * Issue 40 item 3: durable waits as steps. A run's `run.sleep`, `run.wait_for` and `runs.wait` step
 * each waits on one waitpoint row (one per step), the run in status WAITING meanwhile. An `event`
 * waitpoint is completed through the API (a key with runs:write, or its own one-time `wpt_` token,
 * of which only the SHA-256 is kept); a `run` one when the run it awaits finishes; a `sleep` one
 * when its time comes.
 */
export class Waitpoints1763780018000 implements MigrationInterface {
  name = 'Waitpoints1763780018000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE run_executions DROP CONSTRAINT IF EXISTS run_executions_status_check;
ALTER TABLE run_executions ADD CONSTRAINT run_executions_status_check CHECK (status IN (${STATUSES}, 'WAITING'));
DROP INDEX IF EXISTS run_executions_concurrency_idx;
CREATE INDEX run_executions_concurrency_idx ON run_executions (workspace_id, concurrency_key, dispatch_seq)
  WHERE concurrency_key IS NOT NULL AND status IN ('QUEUED', 'RUNNING', 'AWAITING_APPROVAL', 'WAITING');
ALTER TABLE run_events DROP CONSTRAINT IF EXISTS run_events_type_check;
ALTER TABLE run_events ADD CONSTRAINT run_events_type_check
  CHECK (type IN (${EVENT_TYPES}, 'waitpoint.created', 'waitpoint.completed'));

CREATE TABLE waitpoints (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  execution_id uuid NOT NULL,
  step_no integer NOT NULL,
  kind text NOT NULL CHECK (kind IN ('sleep', 'event', 'run')),
  name text CHECK (length(name) <= 200),
  status text NOT NULL DEFAULT 'waiting' CHECK (status IN ('waiting', 'completed', 'timed_out', 'cancelled')),
  output_schema jsonb,
  output jsonb,
  -- An event waitpoint's one-time token: its SHA-256 only (kept, so a second use is told it is spent).
  token_hash char(64),
  awaited_execution_id uuid,
  expires_at timestamptz,
  completed_by uuid REFERENCES users(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  -- One waitpoint per step: a retried step finds its own.
  UNIQUE (execution_id, step_no),
  UNIQUE (workspace_id, id),
  FOREIGN KEY (workspace_id, execution_id) REFERENCES run_executions (workspace_id, id),
  FOREIGN KEY (workspace_id, awaited_execution_id) REFERENCES run_executions (workspace_id, id)
);
CREATE UNIQUE INDEX waitpoints_token_idx ON waitpoints (token_hash) WHERE token_hash IS NOT NULL;
CREATE INDEX waitpoints_recent_idx ON waitpoints (workspace_id, status, created_at DESC, id DESC);
CREATE INDEX waitpoints_awaited_idx ON waitpoints (awaited_execution_id)
  WHERE awaited_execution_id IS NOT NULL AND status = 'waiting';

-- The workspace of a waitpoint's token: a request that carries only the token has no
-- workspace yet, and RLS hides every row until it has one.
CREATE FUNCTION weft_waitpoint_token_workspace(hash text) RETURNS uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$ SELECT workspace_id FROM waitpoints WHERE token_hash = hash $$;
REVOKE ALL ON FUNCTION weft_waitpoint_token_workspace(text) FROM PUBLIC;
`);
    await q.query(workspaceRlsSql('waitpoints'));
    await grantToAppRole(q, 'weft_waitpoint_token_workspace(text)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION IF EXISTS weft_waitpoint_token_workspace(text);
${dropWorkspaceRlsSql('waitpoints')}
DROP TABLE waitpoints;
DELETE FROM run_events WHERE type IN ('waitpoint.created', 'waitpoint.completed');
ALTER TABLE run_events DROP CONSTRAINT IF EXISTS run_events_type_check;
ALTER TABLE run_events ADD CONSTRAINT run_events_type_check CHECK (type IN (${EVENT_TYPES}));
UPDATE run_executions SET status = 'RUNNING' WHERE status = 'WAITING';
ALTER TABLE run_executions DROP CONSTRAINT IF EXISTS run_executions_status_check;
ALTER TABLE run_executions ADD CONSTRAINT run_executions_status_check CHECK (status IN (${STATUSES}));
DROP INDEX IF EXISTS run_executions_concurrency_idx;
CREATE INDEX run_executions_concurrency_idx ON run_executions (workspace_id, concurrency_key, dispatch_seq)
  WHERE concurrency_key IS NOT NULL AND status IN ('QUEUED', 'RUNNING', 'AWAITING_APPROVAL');
`);
  }
}
