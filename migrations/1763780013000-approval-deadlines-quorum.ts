import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

const EVENT_TYPES = `'run.status', 'step.started', 'step.completed', 'step.failed', 'approval.requested',
    'approval.resolved', 'decision.recorded', 'run.finished'`;

/**
 * Issue 32 parts 3 and 4: an approval asked for by a rule carries that rule's approvers (a quorum of
 * `min` distinct people, from a list or any member) and deadline (`expires_at`, what happens then,
 * how often it escalated, whether the deadline decided it). Each person's vote is a row of
 * `run_approval_votes` (one per person and approval) and a VOTE link of the run's chain.
 */
export class ApprovalDeadlinesQuorum1763780013000 implements MigrationInterface {
  name = 'ApprovalDeadlinesQuorum1763780013000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE run_approvals
  ADD COLUMN policy_decision jsonb,
  ADD COLUMN approvers jsonb,
  ADD COLUMN deadline jsonb,
  ADD COLUMN expires_at timestamptz,
  ADD COLUMN escalations integer NOT NULL DEFAULT 0,
  ADD COLUMN expired boolean NOT NULL DEFAULT false;

CREATE TABLE run_approval_votes (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  approval_id uuid NOT NULL REFERENCES run_approvals(id),
  execution_id uuid NOT NULL,
  user_id uuid NOT NULL REFERENCES users(id),
  decision text NOT NULL CHECK (decision IN ('APPROVED', 'REJECTED', 'RESPOND')),
  credential_kind text NOT NULL,
  credential_id uuid,
  notes text,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- One vote per person: a second (or a concurrent double) vote finds the first.
  UNIQUE (approval_id, user_id),
  FOREIGN KEY (workspace_id, execution_id) REFERENCES run_executions (workspace_id, id)
);

ALTER TABLE run_audit DROP CONSTRAINT IF EXISTS run_audit_kind_check;
ALTER TABLE run_audit ADD CONSTRAINT run_audit_kind_check
  CHECK (kind IN ('TOOL', 'APPROVAL', 'DECISION', 'RERUN', 'VOTE'));
ALTER TABLE run_events DROP CONSTRAINT IF EXISTS run_events_type_check;
ALTER TABLE run_events ADD CONSTRAINT run_events_type_check
  CHECK (type IN (${EVENT_TYPES}, 'approval.voted', 'approval.escalated'));
`);
    await q.query(workspaceRlsSql('run_approval_votes'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DELETE FROM run_events WHERE type IN ('approval.voted', 'approval.escalated');
ALTER TABLE run_events DROP CONSTRAINT IF EXISTS run_events_type_check;
ALTER TABLE run_events ADD CONSTRAINT run_events_type_check CHECK (type IN (${EVENT_TYPES}));
DELETE FROM run_audit WHERE kind = 'VOTE';
ALTER TABLE run_audit DROP CONSTRAINT IF EXISTS run_audit_kind_check;
ALTER TABLE run_audit ADD CONSTRAINT run_audit_kind_check CHECK (kind IN ('TOOL', 'APPROVAL', 'DECISION', 'RERUN'));
${dropWorkspaceRlsSql('run_approval_votes')}
DROP TABLE run_approval_votes;
ALTER TABLE run_approvals
  DROP COLUMN policy_decision, DROP COLUMN approvers, DROP COLUMN deadline, DROP COLUMN expires_at,
  DROP COLUMN escalations, DROP COLUMN expired;
`);
  }
}
