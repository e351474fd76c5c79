import type { EntityManager } from 'typeorm';
import type { ApprovalRow, ChangeSetOutcome, ChangeSetStatus, ResolveApprovalRequest } from '../approvals/schemas';
import type { ApprovalSubject } from '../approvals/subject';
import { WITHOUT_RULE } from '../approvals/views';
import { storedPrincipalLive } from '../platform/auth/credential-liveness';
import type { Principal } from '../platform/auth/principal';
import { iso } from '../platform/dates';
import { ConflictError, ValidationFailedError } from '../platform/errors';
import type { OutboxRelay } from '../platform/outbox/relay';
import { applyChangeSet, stagerRevoked } from './apply';
import type { ChangeSetRecord } from './repository';
import { findChangeSetByApproval, listChangeSets, lockChangeSetByApproval, resolveChangeSet } from './repository';
import { APPROVAL_STATUS_OF } from './schemas';

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
  ...WITHOUT_RULE,
});

/** The change-sets whose approval has `status` (all of them without one), newest first. */
function changeSetsWithApprovalStatus(m: EntityManager, query: { status?: string; limit: number }) {
  const statuses = query.status
    ? (Object.keys(APPROVAL_STATUS_OF) as ChangeSetStatus[]).filter((s) => APPROVAL_STATUS_OF[s] === query.status)
    : undefined;
  if (statuses && statuses.length === 0) return Promise.resolve([]);
  return listChangeSets(m, { ...(statuses ? { statuses } : {}), limit: query.limit });
}

/**
 * Resolves a change-set's approval in the resolve's transaction, the separation rules having allowed
 * it. APPROVED applies it all or nothing (`applied`, or `conflicted` with nothing written); REJECTED
 * writes nothing. A second resolve is 409.
 */
async function resolveChangeSetApproval(
  m: EntityManager,
  approvalId: string,
  principal: Principal,
  body: ResolveApprovalRequest,
): Promise<ChangeSetOutcome & { created: number }> {
  if (body.decision === 'RESPOND' || body.input !== undefined) {
    throw new ValidationFailedError([
      {
        loc: ['body', body.decision === 'RESPOND' ? 'decision' : 'input'],
        msg: 'A change-set is approved or rejected as staged: no RESPOND and no edited input',
        type: 'value_error',
      },
    ]);
  }
  // Locked: of two resolves one goes first and the other sees what it did.
  const found = (await lockChangeSetByApproval(m, approvalId))!;
  if (found.status !== 'pending') {
    throw new ConflictError({
      error: 'approval_resolved',
      status: APPROVAL_STATUS_OF[found.status],
      message: 'The approval was already resolved',
    });
  }
  const resolver = { kind: principal.credential.kind, id: principal.credential.id ?? null };
  const base = { id: found.id, userId: principal.userId, credential: resolver, notes: body.notes ?? null };
  if (body.decision === 'REJECTED') {
    await resolveChangeSet(m, { ...base, status: 'rejected', conflicts: null, applied: null });
    return { change_set_id: found.id, status: 'rejected', conflicts: [], applied: null, created: 0 };
  }
  // Deferred work acts only while the identity that started it still may: a revoked or expired
  // credential, or a stager who left the workspace, applies nothing.
  const live = await storedPrincipalLive(m, principal.workspaceId, {
    userId: found.staged_by,
    credential: found.staged_by_credential,
  });
  const outcome = live ? await applyChangeSet(m, found) : stagerRevoked();
  if (outcome.status === 'conflicted') {
    await resolveChangeSet(m, { ...base, status: 'conflicted', conflicts: outcome.conflicts, applied: null });
    return { change_set_id: found.id, status: 'conflicted', conflicts: outcome.conflicts, applied: null, created: 0 };
  }
  await resolveChangeSet(m, { ...base, status: 'applied', conflicts: null, applied: outcome.applied });
  return {
    change_set_id: found.id,
    status: 'applied',
    conflicts: [],
    applied: outcome.applied,
    created: outcome.created,
  };
}

/**
 * A staged change-set as an approval's subject (issue 31 part 4): its stager stands where a run's
 * dispatcher does, so the separation rules of runs apply to it; the decision applies or rejects it.
 */
export function changeSetApprovals(deps: { outbox: Pick<OutboxRelay, 'kick'> }): ApprovalSubject<ChangeSetRecord> {
  return {
    kind: 'change_set',

    list: async (m, query) => (await changeSetsWithApprovalStatus(m, query)).map(changeSetApprovalRow),

    async describe(m, approvalId) {
      const staged = await findChangeSetByApproval(m, approvalId);
      return staged ? changeSetApprovalRow(staged) : null;
    },

    async requester(m, approvalId) {
      const staged = await findChangeSetByApproval(m, approvalId);
      if (!staged) return null;
      return { requester: { userId: staged.staged_by, credential: staged.staged_by_credential }, asked: staged };
    },

    async onResolved(m, principal, staged, body) {
      const { created, ...changeSet } = await resolveChangeSetApproval(m, staged.approval_id, principal, body);
      return {
        response: {
          approval_id: staged.approval_id,
          decision: body.decision,
          execution_id: null,
          change_set: changeSet,
          status: APPROVAL_STATUS_OF[changeSet.status],
          approvals_remaining: 0,
        },
        // The applied nodes' node.created (embedding, resolver) leave now that they are committed.
        afterCommit: created > 0 ? async () => deps.outbox.kick(principal.workspaceId) : undefined,
      };
    },
  };
}
