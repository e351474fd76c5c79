import type { ChangeSetRecord } from '../change-sets/repository';
import { APPROVAL_STATUS_OF } from '../change-sets/schemas';
import { iso } from '../platform/dates';
import { resolvedCredential } from './audit';
import type { ApprovalVote, RunApproval, RunExecution, RunStep } from './entities';
import type { ApprovalRow, RunSummary } from './schemas';

// The entity → response mappers of the runs API (`service.ts`): rows as the routes answer them.

export const approvalRow = (approval: RunApproval, votes: readonly ApprovalVote[] = []): ApprovalRow => ({
  approval_id: approval.id,
  subject: 'run_step',
  execution_id: approval.executionId,
  change_set_id: null,
  status: approval.status,
  step: { step_no: approval.stepNo, tool: approval.tool, input: approval.input },
  notes: approval.notes,
  edited_input: approval.editedInput ?? null,
  response: approval.response ?? null,
  resolved_by: approval.resolvedBy,
  resolved_by_credential: resolvedCredential(approval),
  requested_at: approval.requestedAt.toISOString(),
  resolved_at: iso(approval.resolvedAt),
  policy_decision: approval.policyDecision
    ? { version: approval.policyDecision.version, rule: approval.policyDecision.rule }
    : null,
  approvers: approval.approvers ?? null,
  deadline: approval.deadline ?? null,
  expires_at: iso(approval.expiresAt),
  escalations: approval.escalations ?? 0,
  expired: approval.expired ?? false,
  votes: votes.map((vote) => ({
    user_id: vote.user_id,
    decision: vote.decision,
    credential: { kind: vote.credential_kind, id: vote.credential_id },
    notes: vote.notes,
    voted_at: vote.created_at.toISOString(),
  })),
});

/** A staged change-set's approval, in the shape of a run's (issue 31 part 4): no step, rule, deadline or votes. */
export const changeSetApprovalRow = (row: ChangeSetRecord): ApprovalRow => ({
  approval_id: row.approval_id,
  subject: 'change_set',
  execution_id: null,
  change_set_id: row.id,
  status: APPROVAL_STATUS_OF[row.status],
  step: null,
  notes: row.notes,
  edited_input: null,
  response: null,
  resolved_by: row.resolved_by,
  resolved_by_credential: row.resolved_by_credential,
  requested_at: iso(row.created_at),
  resolved_at: iso(row.resolved_at),
  policy_decision: null,
  approvers: null,
  deadline: null,
  expires_at: null,
  escalations: 0,
  expired: false,
  votes: [],
});

export const stepRow = (step: RunStep) => ({
  step_id: step.id,
  step_no: step.stepNo,
  kind: step.kind,
  tool: step.tool,
  input: step.input,
  requires_approval: step.requiresApproval,
  status: step.status,
  output: step.output ?? null,
  error: step.error,
  credits_charged: step.creditsCharged,
  supersedes_step_id: step.supersedesStepId,
  superseded: step.superseded,
  reused_from_step_id: step.reusedFromStepId,
  policy_decision: step.policyDecision ?? null,
  started_at: iso(step.startedAt),
  finished_at: iso(step.finishedAt),
});

/** A run's tags, concurrency key and rerun lineage, as its summary shows them (issue 26 parts 4 and 5). */
const controlOf = (run: RunExecution) => ({
  tags: run.tags,
  concurrency:
    run.concurrencyKey && run.concurrencyLimit && run.concurrencyPolicy
      ? { key: run.concurrencyKey, limit: run.concurrencyLimit, policy: run.concurrencyPolicy }
      : null,
  queued_reason: run.status === 'QUEUED' && run.heldStart ? ('concurrency_limit' as const) : null,
  rerun_of: run.rerunOf,
});

export const summaryOf = (run: RunExecution): RunSummary => ({
  execution_id: run.id,
  run_id: run.runId,
  agent: run.agent,
  status: run.status,
  error: run.error,
  credits_charged: run.creditsCharged,
  ...controlOf(run),
  schedule_id: run.scheduleId ?? null,
  created_at: run.createdAt.toISOString(),
  updated_at: run.updatedAt.toISOString(),
});
