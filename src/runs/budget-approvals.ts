import type { EntityManager } from 'typeorm';
import type { ApprovalStatus, CredentialKind } from '../approvals/entities';
import type { ApprovalRow, BudgetLimit, BudgetLimits, BudgetSpent } from '../approvals/schemas';
import { WITHOUT_RULE } from '../approvals/views';
import { iso } from '../platform/dates';
import { queryFirst, queryRows } from '../platform/db/query';
import type { BudgetOverrun } from './budget';
import type { RunStep } from './entities';
import { FINISHED_STATUSES } from './entities';
import { recordRunEvent } from './event-repository';

// Issue 40 item 4: the budget approvals of runs (`run_budget_approvals`), their rows as the inbox shows
// them, and the requests the run workflow's approval wait makes. The subject is `budget-subject.ts`.

/** A budget approval as read, its status `cancelled` once its run finished while it was pending. */
export interface BudgetApprovalRecord {
  id: string;
  workspace_id: string;
  execution_id: string;
  step_no: number;
  tool: string;
  input: Record<string, unknown>;
  budget: BudgetLimits;
  spent: BudgetSpent;
  step_credits: number;
  exceeded: BudgetLimit[];
  status: ApprovalStatus;
  notes: string | null;
  edits: BudgetLimits | null;
  resolved_by: string | null;
  resolved_by_credential_kind: CredentialKind | null;
  resolved_by_credential_id: string | null;
  requested_at: Date;
  resolved_at: Date | null;
}

const FINISHED = FINISHED_STATUSES.map((status) => `'${status}'`).join(', ');
const RECORDS = `
  SELECT a.id, a.workspace_id, a.execution_id, a.step_no, a.tool, a.input, a.budget, a.spent, a.step_credits,
    a.exceeded, CASE WHEN a.status = 'pending' AND e.status IN (${FINISHED}) THEN 'cancelled' ELSE a.status END
      AS status,
    a.notes, a.edits, a.resolved_by, a.resolved_by_credential_kind, a.resolved_by_credential_id, a.requested_at,
    a.resolved_at
  FROM run_budget_approvals a JOIN run_executions e ON e.id = a.execution_id`;

export const findBudgetApproval = (m: EntityManager, approvalId: string) =>
  queryFirst<BudgetApprovalRecord>(m, `${RECORDS} WHERE a.id = $1`, [approvalId]);

export const budgetApprovalOfStep = (m: EntityManager, executionId: string, stepNo: number) =>
  queryFirst<BudgetApprovalRecord>(m, `${RECORDS} WHERE a.execution_id = $1 AND a.step_no = $2`, [executionId, stepNo]);

/** A run's budget approvals, in step order. */
export const budgetApprovalsOf = (m: EntityManager, executionId: string) =>
  queryRows<BudgetApprovalRecord>(m, `${RECORDS} WHERE a.execution_id = $1 ORDER BY a.step_no`, [executionId]);

/** The transaction's workspace's budget approvals with `status` (all without one), newest first. */
export const listBudgetApprovals = (m: EntityManager, query: { status?: ApprovalStatus; limit: number }) =>
  queryRows<BudgetApprovalRecord>(
    m,
    `SELECT * FROM (${RECORDS}) r WHERE ($1::text IS NULL OR r.status = $1)
     ORDER BY r.requested_at DESC, r.id DESC LIMIT $2`,
    [query.status ?? null, query.limit],
  );

/** The budget approval, locked (the caller holds the run's lock first, as every writer of a run takes it). */
export const lockBudgetApproval = async (m: EntityManager, approvalId: string) => {
  await queryFirst(m, `SELECT id FROM run_budget_approvals WHERE id = $1 FOR UPDATE`, [approvalId]);
  return findBudgetApproval(m, approvalId);
};

/**
 * The step's budget approval, created PENDING on first request with what the step asks (the retried
 * activity finds it), its subject stored; `created` when this call created it.
 */
export async function requestBudgetApproval(
  m: EntityManager,
  step: Pick<RunStep, 'workspaceId' | 'executionId' | 'stepNo' | 'tool' | 'input'>,
  overrun: BudgetOverrun,
): Promise<{ approval: BudgetApprovalRecord; created: boolean }> {
  const created = await queryFirst<{ id: string }>(
    m,
    `WITH asked AS (
       INSERT INTO run_budget_approvals
         (workspace_id, execution_id, step_no, tool, input, budget, spent, step_credits, exceeded)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (execution_id, step_no) DO NOTHING
       RETURNING id, workspace_id
     )
     INSERT INTO approval_subjects (approval_id, workspace_id, subject) SELECT id, workspace_id, 'budget' FROM asked
     RETURNING approval_id AS id`,
    [
      step.workspaceId,
      step.executionId,
      step.stepNo,
      step.tool,
      JSON.stringify(step.input),
      JSON.stringify(overrun.budget),
      JSON.stringify(overrun.spent),
      overrun.stepCredits,
      overrun.exceeded,
    ],
  );
  const approval = (await budgetApprovalOfStep(m, step.executionId, step.stepNo))!;
  if (created) {
    await recordRunEvent(m, step.executionId, {
      type: 'approval.requested',
      data: { approval_id: approval.id, step_no: step.stepNo, tool: step.tool, input: step.input, subject: 'budget' },
    });
  }
  return { approval, created: created !== null };
}

/** PENDING → APPROVED/REJECTED with who decided it; the caller holds both locks and checked it pending. */
export const resolveBudgetApproval = (
  m: EntityManager,
  input: {
    approvalId: string;
    status: 'approved' | 'rejected';
    userId: string;
    credential: { kind: CredentialKind; id?: string };
    notes: string | null;
    edits: BudgetLimits | null;
  },
) =>
  queryFirst(
    m,
    `UPDATE run_budget_approvals SET status = $2, resolved_by = $3, resolved_by_credential_kind = $4,
       resolved_by_credential_id = $5, notes = $6, edits = $7, resolved_at = now()
     WHERE id = $1 AND status = 'pending' RETURNING id`,
    [
      input.approvalId,
      input.status,
      input.userId,
      input.credential.kind,
      input.credential.id ?? null,
      input.notes,
      input.edits ? JSON.stringify(input.edits) : null,
    ],
  );

/** Raises the run's budget by a reviewer's edits (the limits not given stay). */
export const raiseBudget = (m: EntityManager, executionId: string, edits: BudgetLimits) =>
  queryFirst(m, `UPDATE run_executions SET budget = coalesce(budget, '{}'::jsonb) || $2::jsonb WHERE id = $1`, [
    executionId,
    JSON.stringify(edits),
  ]);

/** A budget approval as the inbox shows it: the step it wants, and the budget, spend and price beside it. */
export const budgetApprovalRow = (row: BudgetApprovalRecord): ApprovalRow => ({
  approval_id: row.id,
  subject: 'budget',
  execution_id: row.execution_id,
  change_set_id: null,
  status: row.status,
  step: { step_no: row.step_no, tool: row.tool, input: row.input },
  notes: row.notes,
  edited_input: null,
  response: null,
  resolved_by: row.resolved_by,
  resolved_by_credential: row.resolved_by_credential_kind
    ? { kind: row.resolved_by_credential_kind, id: row.resolved_by_credential_id }
    : null,
  requested_at: row.requested_at.toISOString(),
  resolved_at: iso(row.resolved_at),
  ...WITHOUT_RULE,
  budget: {
    limits: row.budget,
    spent: row.spent,
    step_credits: row.step_credits,
    exceeded: row.exceeded,
    edits: row.edits,
  },
});
