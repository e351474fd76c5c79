import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Issue 40 item 4: a run's budget (`run_executions.budget`, null: none) and the budget approvals a run
 * waits on when its next step would exceed it (`run_budget_approvals`, one per step at most), each
 * with its subject stored as every approval's is (`approval_subjects`, subject `budget`).
 */
export class RunBudgets1763780019000 implements MigrationInterface {
  name = 'RunBudgets1763780019000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE run_executions ADD COLUMN budget jsonb;
CREATE TABLE run_budget_approvals (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  execution_id uuid NOT NULL REFERENCES run_executions(id) ON DELETE CASCADE,
  step_no integer NOT NULL,
  tool text NOT NULL,
  input jsonb NOT NULL,
  budget jsonb NOT NULL,
  spent jsonb NOT NULL,
  step_credits integer NOT NULL,
  exceeded text[] NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected', 'cancelled')),
  notes text,
  edits jsonb,
  resolved_by uuid,
  resolved_by_credential_kind text,
  resolved_by_credential_id uuid,
  requested_at timestamptz NOT NULL DEFAULT now(),
  resolved_at timestamptz,
  UNIQUE (execution_id, step_no)
);
CREATE INDEX run_budget_approvals_requested ON run_budget_approvals (workspace_id, requested_at DESC);
`);
    await q.query(workspaceRlsSql('run_budget_approvals'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(dropWorkspaceRlsSql('run_budget_approvals'));
    await q.query(`DROP TABLE run_budget_approvals; ALTER TABLE run_executions DROP COLUMN budget;`);
  }
}
