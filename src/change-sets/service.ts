import type { EntityManager } from 'typeorm';
import { storedPrincipalLive } from '../platform/auth/credential-liveness';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { iso } from '../platform/dates';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { ConflictError, ForbiddenError, NotFoundError, ValidationFailedError } from '../platform/errors';
import type { DispatcherResolved } from '../runs/dispatcher-identity';
import { separationWithin } from '../runs/dispatcher-identity';
import { applyChangeSet, previewChangeSet, stagerRevoked } from './apply';
import type { ChangeSetRecord } from './repository';
import { findChangeSet, listChangeSets, lockChangeSetByApproval, resolveChangeSet } from './repository';
import type { ChangeSetListQuery, ChangeSetOutcome, ChangeSetRow, ChangeSetStatus } from './schemas';
import { APPROVAL_STATUS_OF } from './schemas';

export const changeSetRow = (row: ChangeSetRecord): ChangeSetRow => ({
  change_set_id: row.id,
  approval_id: row.approval_id,
  status: row.status,
  source: {
    kind: row.source_kind,
    prompt_id: row.source_prompt_id,
    capability: row.source_capability,
    call: row.source_call,
  },
  operations: row.operations,
  staged_by: row.staged_by,
  staged_by_credential: { kind: row.staged_by_credential.kind, id: row.staged_by_credential.id },
  resolved_by: row.resolved_by,
  resolved_by_credential: row.resolved_by_credential,
  notes: row.notes,
  conflicts: row.conflicts,
  applied: row.applied,
  created_at: iso(row.created_at),
  resolved_at: iso(row.resolved_at),
});

/** The change-sets whose approval has `status` (all of them without one), newest first. */
export function changeSetsWithApprovalStatus(m: EntityManager, query: { status?: string; limit: number }) {
  const statuses = query.status
    ? (Object.keys(APPROVAL_STATUS_OF) as ChangeSetStatus[]).filter((s) => APPROVAL_STATUS_OF[s] === query.status)
    : undefined;
  if (statuses && statuses.length === 0) return Promise.resolve([]);
  return listChangeSets(m, { ...(statuses ? { statuses } : {}), limit: query.limit });
}

export interface ChangeSetDecision {
  decision: 'APPROVED' | 'REJECTED' | 'RESPOND';
  notes?: string;
  input?: Record<string, unknown>;
}

/**
 * Resolves a change-set's approval in the caller's transaction (`POST /v1/approvals/{id}/resolve`),
 * or answers undefined when `approvalId` is not a change-set's. The separation rules of runs apply:
 * the credential that staged it never resolves it, its user through another credential only as the
 * approval policy allows. APPROVED applies it all or nothing (`applied`, or `conflicted` with
 * nothing written); REJECTED writes nothing. A second resolve is 409.
 */
export async function resolveChangeSetApproval(
  m: EntityManager,
  principal: Principal,
  approvalId: string,
  body: ChangeSetDecision,
): Promise<(ChangeSetOutcome & { created: number; dispatcherResolved: DispatcherResolved | null }) | undefined> {
  const found = await lockChangeSetByApproval(m, approvalId);
  if (!found) return undefined;
  const separation = await separationWithin(m, {
    dispatcher: { userId: found.staged_by, credential: found.staged_by_credential },
    resolver: principal,
    subject: 'change_set',
  });
  if (separation.refusal) throw new ForbiddenError(separation.refusal);
  const { dispatcherResolved } = separation;
  if (body.decision === 'RESPOND' || body.input !== undefined) {
    throw new ValidationFailedError([
      {
        loc: ['body', body.decision === 'RESPOND' ? 'decision' : 'input'],
        msg: 'A change-set is approved or rejected as staged: no RESPOND and no edited input',
        type: 'value_error',
      },
    ]);
  }
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
    return {
      change_set_id: found.id,
      status: 'rejected',
      conflicts: [],
      applied: null,
      created: 0,
      dispatcherResolved,
    };
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
    return {
      change_set_id: found.id,
      status: 'conflicted',
      conflicts: outcome.conflicts,
      applied: null,
      created: 0,
      dispatcherResolved,
    };
  }
  await resolveChangeSet(m, { ...base, status: 'applied', conflicts: null, applied: outcome.applied });
  return {
    change_set_id: found.id,
    status: 'applied',
    conflicts: [],
    applied: outcome.applied,
    created: outcome.created,
    dispatcherResolved,
  };
}

/** The change-set routes: a list and one with its diff against the graph now. */
export function createChangeSetService(deps: { uow: UnitOfWork }) {
  const { uow } = deps;
  return {
    list: (principal: Principal, query: ChangeSetListQuery) =>
      uow(scopeOf(principal), async (m) => ({
        change_sets: (
          await listChangeSets(m, { ...(query.status ? { statuses: [query.status] } : {}), limit: query.limit })
        ).map(changeSetRow),
      })),

    get: (principal: Principal, changeSetId: string) =>
      uow({ ...scopeOf(principal), snapshot: true }, async (m) => {
        const row = await findChangeSet(m, changeSetId);
        if (!row) throw new NotFoundError({ error: 'change_set_not_found', change_set_id: changeSetId });
        return {
          ...changeSetRow(row),
          preview: row.status === 'pending' ? await previewChangeSet(m, row.operations) : null,
        };
      }),
  };
}

export type ChangeSetService = ReturnType<typeof createChangeSetService>;
