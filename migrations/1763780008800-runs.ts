import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Agent runs (contract 4.4, 2.10, 3): an execution per dispatch, its steps (planned at dispatch,
 * filled in by the run workflow) and the approvals its steps wait on.
 */
export class Runs1763780008800 implements MigrationInterface {
  name = 'Runs1763780008800';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE run_executions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  user_id uuid NOT NULL REFERENCES users(id),
  run_id uuid NOT NULL DEFAULT gen_random_uuid(),
  agent text NOT NULL CHECK (agent IN ('playbook', 'llm')),
  status text NOT NULL DEFAULT 'QUEUED'
    CHECK (status IN ('QUEUED', 'RUNNING', 'AWAITING_APPROVAL', 'SUCCEEDED', 'FAILED', 'CANCELLED')),
  input jsonb NOT NULL,
  output jsonb,
  error jsonb,
  -- What the steps act as: the dispatcher's scopes and credential, frozen at dispatch.
  principal jsonb NOT NULL,
  idempotency_key text,
  request_hash char(64),
  credits_charged integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  UNIQUE (workspace_id, id)
);
-- Contract 4.4: idempotency_key is per workspace; concurrent dispatches meet on this index.
CREATE UNIQUE INDEX run_executions_key_idx ON run_executions (workspace_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX run_executions_recent_idx ON run_executions (workspace_id, created_at DESC, id DESC);

CREATE TABLE run_steps (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  execution_id uuid NOT NULL,
  step_no integer NOT NULL CHECK (step_no >= 0),
  kind text NOT NULL DEFAULT 'TOOL' CHECK (kind IN ('TOOL', 'DECISION')),
  tool text NOT NULL,
  input jsonb NOT NULL,
  requires_approval boolean NOT NULL DEFAULT false,
  status text NOT NULL DEFAULT 'PENDING'
    CHECK (status IN ('PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'SKIPPED')),
  output jsonb,
  error jsonb,
  credits_charged integer NOT NULL DEFAULT 0,
  -- A DECISION step that names an earlier head decision supersedes it (agent.record_decision).
  supersedes_step_id uuid,
  superseded boolean NOT NULL DEFAULT false,
  started_at timestamptz,
  finished_at timestamptz,
  UNIQUE (execution_id, step_no),
  FOREIGN KEY (workspace_id, execution_id) REFERENCES run_executions (workspace_id, id)
);

CREATE TABLE run_approvals (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  execution_id uuid NOT NULL,
  step_no integer NOT NULL,
  tool text NOT NULL,
  input jsonb NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected', 'cancelled')),
  notes text,
  resolved_by uuid REFERENCES users(id),
  requested_at timestamptz NOT NULL DEFAULT now(),
  resolved_at timestamptz,
  -- One approval per step: the workflow's retried request creates it once.
  UNIQUE (execution_id, step_no),
  FOREIGN KEY (workspace_id, execution_id) REFERENCES run_executions (workspace_id, id)
);
-- Each run's hash chain (contract 6): hash = sha256(prev_hash || canonical JSON of the entry), the
-- entry recomputed from the step or approval row it names, so altering that row breaks the chain.
CREATE TABLE run_audit (
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  execution_id uuid NOT NULL,
  seq integer NOT NULL CHECK (seq >= 0),
  kind text NOT NULL CHECK (kind IN ('TOOL', 'APPROVAL', 'DECISION')),
  ref_id uuid NOT NULL,
  prev_hash char(64) NOT NULL,
  hash char(64) NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (execution_id, seq),
  FOREIGN KEY (workspace_id, execution_id) REFERENCES run_executions (workspace_id, id)
);

CREATE INDEX run_approvals_recent_idx ON run_approvals (workspace_id, status, requested_at DESC, id DESC);
`);
    for (const table of ['run_executions', 'run_steps', 'run_approvals', 'run_audit']) {
      await q.query(workspaceRlsSql(table));
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['run_audit', 'run_approvals', 'run_steps', 'run_executions']) {
      await q.query(dropWorkspaceRlsSql(table));
      await q.query(`DROP TABLE ${table}`);
    }
  }
}
