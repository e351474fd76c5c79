import type { EntityManager } from 'typeorm';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { ForbiddenError, NotFoundError, ValidationFailedError } from '../platform/errors';
import { separationWithin } from './dispatcher-identity';
import type { ApprovalStatus } from './entities';
import { readApprovalPolicy, saveApprovalPolicy } from './policy';
import * as repo from './repository';
import type { ApprovalRules, ApprovalRulesPut } from './rules';
import { checkApprovalRules, namedApprovers, readApprovalRules, saveApprovalRules } from './rules';
import type { ApprovalPolicy, ApprovalRow, ResolveApprovalRequest, ResolveApprovalResponse } from './schemas';
import type { ApprovalSubject } from './subject';
import { subjectsByKind } from './subject';

const notFound = (approvalId: string) => new NotFoundError({ error: 'approval_not_found', approval_id: approvalId });

/**
 * The approvals inbox (issue 23, 31 part 4, 32): every subject's approvals in one list, one view and
 * one resolve, plus the workspace's approval policy (who may resolve) and rules (which steps need an
 * approval). What an approval decides on is a subject (`subject.ts`) its feature registers;
 * `subjects` answers them all (read on first use: the features' subjects are built after this service).
 */
export function createApprovalService(deps: { uow: UnitOfWork; subjects: () => readonly ApprovalSubject[] }) {
  const { uow } = deps;
  let registered: ReadonlyMap<string, ApprovalSubject> | undefined;
  const subjects = () => {
    registered ??= subjectsByKind(deps.subjects());
    return registered;
  };

  /** The subject stored with the approval; undefined for an unknown approval (or another workspace's). */
  async function subjectOf(m: EntityManager, approvalId: string): Promise<ApprovalSubject | undefined> {
    const kind = await repo.subjectOf(m, approvalId);
    if (kind === undefined) return undefined;
    const subject = subjects().get(kind);
    if (!subject) throw new Error(`no feature registers the approval subject '${kind}'`);
    return subject;
  }

  return {
    approvalPolicy: (principal: Principal): Promise<ApprovalPolicy> => uow(scopeOf(principal), readApprovalPolicy),

    setApprovalPolicy: (principal: Principal, policy: ApprovalPolicy): Promise<ApprovalPolicy> =>
      uow(scopeOf(principal), async (m) => {
        await saveApprovalPolicy(m, principal.workspaceId, principal.userId, policy);
        return readApprovalPolicy(m);
      }),

    /** The approval rules in force (issue 32), or the default: no rules, `allow`. */
    approvalRules: (principal: Principal): Promise<ApprovalRules> => uow(scopeOf(principal), readApprovalRules),

    /** Adds the next version of the rules; steps decided by earlier versions keep their decision. */
    setApprovalRules: (principal: Principal, body: ApprovalRulesPut): Promise<ApprovalRules> => {
      checkApprovalRules(body);
      return uow(scopeOf(principal), async (m) => {
        // The approvers a rule names must be members now (a member who leaves later simply cannot vote).
        checkApprovalRules(body, new Set(await repo.membersAmong(m, namedApprovers(body))));
        await saveApprovalRules(m, principal.workspaceId, principal.userId, body);
        return readApprovalRules(m);
      });
    },

    /** Every subject's approvals (runs' steps, staged change-sets …), newest first. */
    listApprovals: (principal: Principal, query: { status?: ApprovalStatus; limit: number }) =>
      uow(scopeOf(principal), async (m) => {
        const rows: ApprovalRow[] = [];
        for (const subject of subjects().values()) rows.push(...(await subject.list(m, query)));
        const newestFirst = rows.sort((a, b) =>
          a.requested_at === b.requested_at ? 0 : Date.parse(b.requested_at) - Date.parse(a.requested_at),
        );
        return { approvals: newestFirst.slice(0, query.limit) };
      }),

    getApproval: (principal: Principal, approvalId: string): Promise<ApprovalRow> =>
      uow(scopeOf(principal), async (m) => {
        const row = await (await subjectOf(m, approvalId))?.describe(m, approvalId);
        if (!row) throw notFound(approvalId);
        return row;
      }),

    /**
     * A person's decision, in one transaction: never by the credential that asked for the approval (it
     * dispatched the run, or staged the change-set) or one that stands for it, nor by its user where the
     * workspace's approval policy says so (403, `dispatcher-identity.ts`); then the subject decides it
     * exactly once (409 afterwards) and applies it. The resolving credential is recorded with the decision.
     */
    async resolve(
      principal: Principal,
      approvalId: string,
      body: ResolveApprovalRequest,
    ): Promise<ResolveApprovalResponse> {
      const resolution = await uow(scopeOf(principal), async (m) => {
        const subject = await subjectOf(m, approvalId);
        const found = await subject?.requester(m, approvalId);
        if (!subject || !found) throw notFound(approvalId);
        const separation = await separationWithin(m, {
          dispatcher: found.requester,
          resolver: principal,
          subject: subject.kind,
        });
        if (separation.refusal) throw new ForbiddenError(separation.refusal);
        if (body.edits !== undefined && subject.kind !== 'budget') {
          const msg = 'Only a budget approval is approved with edits (a raised budget)';
          throw new ValidationFailedError([{ loc: ['body', 'edits'], msg, type: 'value_error' }]);
        }
        const resolved = await subject.onResolved(m, principal, found.asked, body);
        return { ...resolved, dispatcherResolved: separation.dispatcherResolved };
      });
      await resolution.afterCommit?.();
      // What let the person who asked for it decide it (NM-5), whatever the subject.
      return { ...resolution.response, dispatcher_resolved: resolution.dispatcherResolved };
    },
  };
}

export type ApprovalService = ReturnType<typeof createApprovalService>;
