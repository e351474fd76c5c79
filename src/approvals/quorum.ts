import type { EntityManager } from 'typeorm';
import type { Principal } from '../platform/auth/principal';
import { ConflictError, ForbiddenError, ValidationFailedError } from '../platform/errors';
import type { ApprovalVote, RunApproval } from './entities';
import * as repo from './repository';
import type { ResolveApprovalRequest } from './schemas';

/**
 * The approving votes that count now: by people the approvers in force name (every voter, for
 * `any_member`). A vote cast before an escalation counts when its voter is still named.
 */
export function approvingVotes(approval: RunApproval, votes: readonly ApprovalVote[]): number {
  const from = approval.approvers?.from;
  return votes.filter((vote) => vote.decision === 'APPROVED' && (!Array.isArray(from) || from.includes(vote.user_id)))
    .length;
}

/** Where a person's decision on a step's approval left it: still short of its quorum, or decided. */
export type PersonDecision = {
  approval: RunApproval;
  status: 'pending' | 'approved' | 'responded' | 'rejected';
  /** How many more approving votes the quorum needs (0 once decided). */
  remaining: number;
};

/**
 * A person's decision on a step's approval (issue 32 part 4), under the approval's lock; the caller
 * holds its run's, taken first as the deadline's outcome takes them: of a resolve and an expiry (or
 * two votes) one goes first, and the other sees what it did. 409 once it is decided, past its
 * deadline or when its run has finished. An approval with approvers takes one vote per named person
 * (403 for anyone else, 409 for a second vote; `onVote` records each) and is decided when `min` of
 * them approved, or at the first rejection.
 */
export async function decideByPerson(
  m: EntityManager,
  principal: Pick<Principal, 'userId' | 'credential'>,
  approvalId: string,
  body: ResolveApprovalRequest,
  onVote: (approval: RunApproval, vote: ApprovalVote) => Promise<void>,
): Promise<PersonDecision> {
  const { approval, due } = (await repo.lockApproval(m, approvalId))!;
  const conflict = () => {
    const pending = approval.status === 'pending';
    return new ConflictError({
      error: pending ? (due ? 'approval_expired' : 'run_finished') : 'approval_resolved',
      status: approval.status,
      message: pending
        ? due
          ? 'The approval’s deadline has passed; its on_expiry outcome applies'
          : 'The run has finished'
        : 'The approval was already resolved',
    });
  };
  if (approval.status !== 'pending' || due) throw conflict();
  const approvers = approval.approvers;
  let remaining = 0;
  if (approvers) {
    if (Array.isArray(approvers.from) && !approvers.from.includes(principal.userId)) {
      throw new ForbiddenError({
        error: 'not_an_approver',
        message: 'The approval rule that asked for this approval does not name you among its approvers',
      });
    }
    if (body.input !== undefined && approvers.min > 1) {
      throw new ValidationFailedError([
        {
          loc: ['body', 'input'],
          msg: `This approval needs ${approvers.min} approvers, who vote on the input as asked: no edits`,
          type: 'value_error',
        },
      ]);
    }
    const vote = await repo.insertVote(m, {
      workspaceId: approval.workspaceId,
      approval_id: approval.id,
      execution_id: approval.executionId,
      user_id: principal.userId,
      decision: body.decision,
      notes: body.notes ?? body.message ?? null,
      credential: principal.credential,
    });
    if (!vote) {
      throw new ConflictError({ error: 'already_voted', message: 'You have voted on this approval already' });
    }
    await onVote(approval, vote);
    if (body.decision === 'APPROVED') {
      remaining = Math.max(0, approvers.min - approvingVotes(approval, await repo.votesOf(m, [approval.id])));
      if (remaining > 0) return { approval, status: 'pending', remaining };
    }
  }
  const status: 'approved' | 'responded' | 'rejected' =
    body.decision === 'APPROVED' ? 'approved' : body.decision === 'RESPOND' ? 'responded' : 'rejected';
  const resolved = await repo.resolveApproval(m, {
    approvalId,
    status,
    userId: principal.userId,
    credential: principal.credential,
    notes: body.notes ?? null,
    editedInput: body.input ?? null,
    response: body.decision === 'RESPOND' ? (body.message ?? null) : null,
  });
  if (!resolved) throw conflict();
  return { approval, status, remaining };
}
