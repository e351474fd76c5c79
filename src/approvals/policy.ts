import type { EntityManager } from 'typeorm';
import { affectedRows, queryFirst } from '../platform/db/query';
import type { DispatcherMayApprove } from './entities';

export interface ApprovalPolicy {
  dispatcher_may_approve: DispatcherMayApprove;
}

/** A workspace without a stored policy: four eyes once there are two people to look. */
export const DEFAULT_APPROVAL_POLICY: ApprovalPolicy = { dispatcher_may_approve: 'when_alone' };

// Who may resolve, given the policy: `dispatcher-identity.ts`.

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
