import type { EntityManager } from 'typeorm';
import type { RunApproval } from './entities';
import * as repo from './repository';

/**
 * Issue 32 part 3: an approval's deadline. The run workflow's activities apply it once due (src/runs
 * takes the run's lock first and records what it did into the run's events and chain).
 */

export type ExpiryOutcome = 'not_due' | 'approved' | 'rejected' | 'escalated' | 'settled';

/**
 * Applies the approval's deadline when it has passed (on the database's clock), under the approval's
 * lock (the caller holds its run's, taken first as a resolve takes them): `reject` or `approve`
 * resolve it (no person, `expired`), `escalate` hands it to `escalate_to` with a new deadline until
 * `max_escalations`, after which it is rejected. `not_due` when the deadline is still ahead,
 * `settled` when it is no longer pending. Answers the approval as it now reads after an escalation.
 */
export async function applyDeadline(
  m: EntityManager,
  approvalId: string,
): Promise<{ outcome: ExpiryOutcome; escalated?: RunApproval }> {
  const locked = await repo.lockApproval(m, approvalId);
  if (!locked) return { outcome: 'settled' };
  const { approval, due } = locked;
  if (approval.status !== 'pending' || !approval.deadline) return { outcome: 'settled' };
  if (!due) return { outcome: 'not_due' };
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
    if (!moved) return { outcome: 'settled' };
    return { outcome: 'escalated', escalated: (await repo.findApprovalById(m, approval.id))! };
  }
  const status = deadline.on_expiry === 'approve' ? 'approved' : 'rejected';
  if (!(await repo.expireApproval(m, approval.id, { status }))) return { outcome: 'settled' };
  return { outcome: status };
}
