import type { EntityManager } from 'typeorm';
import type { Principal } from '../platform/auth/principal';
import type { ApprovalStatus, ApprovalSubjectKind, CredentialKind } from './entities';
import type { ApprovalRow, ResolveApprovalRequest, ResolveApprovalResponse } from './schemas';

/** Who asked for an approval: the separation rules (`policy.ts`) keep them from deciding it. */
export interface Requester {
  userId: string;
  credential: { kind: CredentialKind; id?: string | null };
}

/** A subject's decision, taken in the resolve's transaction, and what follows its commit. */
export interface Resolution {
  /** The answer; the approvals service adds `dispatcher_resolved`, which the separation rules decide. */
  response: Omit<ResolveApprovalResponse, 'dispatcher_resolved'>;
  /** After the commit: wake the run, hand the outbox what the decision queued. */
  afterCommit?: () => Promise<void>;
}

/**
 * What an approval decides on: a run's step, a staged change-set, later a budget or a connector. A
 * feature implements it for its own kind and registers it in its `feature.ts` (`approvalSubjects`);
 * src/app hands every registered subject to the approvals service. The inbox and the resolve find
 * an approval's subject by the kind stored with it (`approval_subjects`), never by trying each.
 * Every method runs in the caller's transaction, under the workspace's RLS.
 */
export interface ApprovalSubject<Asked = unknown> {
  kind: ApprovalSubjectKind;
  /** This subject's approvals for the inbox, newest first, at most `limit`. */
  list(m: EntityManager, query: { status?: ApprovalStatus; limit: number }): Promise<ApprovalRow[]>;
  /** One approval as the inbox shows it (its card and its view); null when there is none. */
  describe(m: EntityManager, approvalId: string): Promise<ApprovalRow | null>;
  /**
   * The approval about to be decided, read before any lock, with who asked for it; null when there
   * is none. `asked` is handed back to `onResolved`.
   */
  requester(m: EntityManager, approvalId: string): Promise<{ requester: Requester; asked: Asked } | null>;
  /**
   * A person's decision, once the separation rules allowed it: the subject checks what it accepts
   * (422), decides exactly once (409 afterwards) and applies it (a step edited, RESPONDed, woken; a
   * change-set applied or rejected).
   */
  onResolved(m: EntityManager, principal: Principal, asked: Asked, body: ResolveApprovalRequest): Promise<Resolution>;
}

/** The registered subjects by kind: a kind registered twice is a wiring error. */
export function subjectsByKind(
  subjects: readonly ApprovalSubject[],
): ReadonlyMap<ApprovalSubjectKind, ApprovalSubject> {
  const byKind = new Map<ApprovalSubjectKind, ApprovalSubject>();
  for (const subject of subjects) {
    if (byKind.has(subject.kind)) throw new Error(`two approval subjects of kind '${subject.kind}'`);
    byKind.set(subject.kind, subject);
  }
  return byKind;
}
