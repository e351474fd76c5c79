import type { EntityManager } from 'typeorm';
import { approvalEntry, voteEntry } from './audit';
import type { ApprovalVote, RunApproval } from './entities';
import * as repo from './repository';
import { recordRunEvent } from './run-events';

/**
 * Issue 32 parts 3 and 4, shared by the API (`service.ts`: votes, resolves) and the run workflow's
 * activities (`steps.ts`: a deadline's outcome): the chain links and events of an approval's votes,
 * its resolution and its deadline.
 */

/** Appends a resolved (or cancelled, or expired) approval to its run's chain, as the row now reads. */
export async function auditApproval(m: EntityManager, approvalId: string): Promise<void> {
  const approval = (await repo.findApprovalById(m, approvalId))!;
  const audit = await repo.appendAudit(m, {
    workspaceId: approval.workspaceId,
    executionId: approval.executionId,
    kind: 'APPROVAL',
    refId: approval.id,
    entry: approvalEntry(approval),
  });
  await recordRunEvent(m, approval.executionId, {
    type: 'approval.resolved',
    data: {
      approval_id: approval.id,
      step_no: approval.stepNo,
      status: approval.status,
      resolved_by: approval.resolvedBy,
      notes: approval.notes,
      ...(approval.expired ? { expired: true } : {}),
    },
    audit,
  });
}

/** A vote's VOTE link and `approval.voted` event. */
export async function auditVote(m: EntityManager, approval: RunApproval, vote: ApprovalVote): Promise<void> {
  const audit = await repo.appendAudit(m, {
    workspaceId: approval.workspaceId,
    executionId: approval.executionId,
    kind: 'VOTE',
    refId: vote.id,
    entry: voteEntry(vote),
  });
  await recordRunEvent(m, approval.executionId, {
    type: 'approval.voted',
    data: { approval_id: approval.id, step_no: approval.stepNo, user_id: vote.user_id, decision: vote.decision },
    audit,
  });
}

/**
 * The approving votes that count now: by people the approvers in force name (every voter, for
 * `any_member`). A vote cast before an escalation counts when its voter is still named.
 */
export function approvingVotes(approval: RunApproval, votes: readonly ApprovalVote[]): number {
  const from = approval.approvers?.from;
  return votes.filter((vote) => vote.decision === 'APPROVED' && (!Array.isArray(from) || from.includes(vote.user_id)))
    .length;
}

export type ExpiryOutcome = 'not_due' | 'approved' | 'rejected' | 'escalated' | 'settled';

/**
 * Applies the approval's deadline when it has passed (on the database's clock), under the run's lock
 * then the approval's, as a resolve takes them: `reject` or `approve` resolve it (no person, `expired`),
 * `escalate` hands it to `escalate_to` with a new deadline until `max_escalations`, after which it is
 * rejected. `not_due` when the deadline is still ahead, `settled` when it is no longer pending.
 */
export async function expireApproval(m: EntityManager, executionId: string, stepNo: number): Promise<ExpiryOutcome> {
  await repo.lockExecution(m, executionId);
  const found = await repo.findApproval(m, executionId, stepNo);
  if (!found) return 'settled';
  const locked = (await repo.lockApproval(m, found.id))!;
  const { approval, due } = locked;
  if (approval.status !== 'pending' || !approval.deadline) return 'settled';
  if (!due) return 'not_due';
  const { deadline } = approval;
  const escalate =
    deadline.on_expiry === 'escalate' &&
    deadline.escalate_to !== undefined &&
    approval.escalations < (deadline.max_escalations ?? 1);
  if (escalate) {
    const moved = await repo.expireApproval(m, approval.id, {
      escalateTo: deadline.escalate_to!,
      afterSeconds: deadline.after_seconds,
    });
    if (!moved) return 'settled';
    const now = (await repo.findApprovalById(m, approval.id))!;
    await recordRunEvent(m, executionId, {
      type: 'approval.escalated',
      data: {
        approval_id: now.id,
        step_no: now.stepNo,
        escalations: now.escalations,
        approvers: now.approvers,
        expires_at: now.expiresAt?.toISOString() ?? null,
      },
    });
    return 'escalated';
  }
  const status = deadline.on_expiry === 'approve' ? 'approved' : 'rejected';
  if (!(await repo.expireApproval(m, approval.id, { status }))) return 'settled';
  await auditApproval(m, approval.id);
  return status;
}
