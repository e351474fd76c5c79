import type { EntityManager } from 'typeorm';
import { iso } from '../platform/dates';
import type { ApprovalVote, RunApproval } from './entities';
import * as repo from './repository';
import type { ApprovalRow } from './schemas';

/** The credential an approval was resolved with; null before, for a cancelled one, and for rows older than it. */
export const resolvedCredential = (approval: RunApproval) =>
  approval.resolvedByCredentialKind
    ? { kind: approval.resolvedByCredentialKind, id: approval.resolvedByCredentialId }
    : null;

/** A step's approval as the API shows it, with its votes (issue 32 part 4). */
/**
 * What an approval of a subject other than a step shows where a step's shows its rule, deadline and
 * votes (a change-set's, a budget's): none of them, one spelling for every such subject.
 */
export const WITHOUT_RULE = {
  policy_decision: null,
  approvers: null,
  deadline: null,
  expires_at: null,
  escalations: 0,
  expired: false,
  votes: [],
} as const satisfies Partial<ApprovalRow>;

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

/** Steps' approvals as the API shows them, each with its votes (one read of the votes for all). */
export async function approvalRows(m: EntityManager, rows: readonly RunApproval[]): Promise<ApprovalRow[]> {
  const votes = await repo.votesOf(
    m,
    rows.map((row) => row.id),
  );
  return rows.map((row) =>
    approvalRow(
      row,
      votes.filter((vote) => vote.approval_id === row.id),
    ),
  );
}
