import type { EntityManager } from 'typeorm';
import type { CredentialRef } from '../platform/auth/principal';
import { affectedRows, queryFirst } from '../platform/db/query';
import type { DispatcherMayApprove, RunPrincipal } from './entities';

export interface ApprovalPolicy {
  dispatcher_may_approve: DispatcherMayApprove;
}

/** A workspace without a stored policy: four eyes once there are two people to look. */
export const DEFAULT_APPROVAL_POLICY: ApprovalPolicy = { dispatcher_may_approve: 'when_alone' };

export interface ApprovalRefusal {
  error: 'approval_by_dispatcher' | 'approval_by_dispatching_user';
  message: string;
}

/**
 * Separation of duties on an approval (issue 23 item 2). The credential that dispatched the run
 * never resolves it: that is the agent whose step waits. Another credential of the same user may,
 * as the workspace's policy says; another member always may. `members` is read only when it matters.
 */
export async function approvalRefusal(input: {
  dispatcher: { userId: string; credential: Pick<RunPrincipal['credential'], 'kind' | 'id'> };
  resolver: { userId: string; credential: CredentialRef };
  policy: ApprovalPolicy;
  members: () => Promise<number>;
  /** A staged change-set's approval (issue 31 part 4): its stager stands where a run's dispatcher does. */
  subject?: 'change_set';
}): Promise<ApprovalRefusal | null> {
  const { dispatcher, resolver, policy } = input;
  const staged = input.subject === 'change_set';
  const theirs = staged ? 'change-sets you staged' : 'runs you dispatched';
  const sameCredential =
    dispatcher.credential.id != null &&
    dispatcher.credential.kind === resolver.credential.kind &&
    dispatcher.credential.id === resolver.credential.id;
  if (sameCredential) {
    return {
      error: 'approval_by_dispatcher',
      message:
        `The credential that ${staged ? 'staged this change-set' : 'dispatched this run'} cannot resolve its ` +
        'approvals: another member, or another credential of yours where the workspace’s approval policy ' +
        'allows it, must decide',
    };
  }
  if (resolver.userId !== dispatcher.userId || policy.dispatcher_may_approve === 'always') return null;
  const rule = `approval policy: dispatcher_may_approve = ${policy.dispatcher_may_approve}`;
  if (policy.dispatcher_may_approve === 'never') {
    return {
      error: 'approval_by_dispatching_user',
      message: `This workspace requires another member to resolve approvals of ${theirs} (${rule})`,
    };
  }
  const members = await input.members();
  if (members <= 1) return null;
  return {
    error: 'approval_by_dispatching_user',
    message: `This workspace has ${members} members, so another member must resolve approvals of ${theirs} (${rule})`,
  };
}

/** The transaction's workspace's policy (RLS picks the row), or the default. */
export async function readApprovalPolicy(m: EntityManager): Promise<ApprovalPolicy> {
  const row = await queryFirst<ApprovalPolicy>(
    m,
    `SELECT dispatcher_may_approve FROM approval_policies WHERE workspace_id = weft_current_workspace()`,
  );
  return row ?? DEFAULT_APPROVAL_POLICY;
}

export const saveApprovalPolicy = (m: EntityManager, workspaceId: string, userId: string, policy: ApprovalPolicy) =>
  affectedRows(
    m,
    `INSERT INTO approval_policies (workspace_id, dispatcher_may_approve, updated_by) VALUES ($1, $2, $3)
     ON CONFLICT (workspace_id) DO UPDATE
       SET dispatcher_may_approve = EXCLUDED.dispatcher_may_approve, updated_by = EXCLUDED.updated_by,
         updated_at = now()`,
    [workspaceId, policy.dispatcher_may_approve, userId],
  );

/** Members of the transaction's workspace. */
export async function memberCount(m: EntityManager): Promise<number> {
  const row = await queryFirst<{ n: number }>(
    m,
    `SELECT count(*)::int AS n FROM memberships WHERE workspace_id = weft_current_workspace()`,
  );
  return row?.n ?? 0;
}
