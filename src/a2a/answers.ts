import type { Message } from '@a2a-js/sdk';
import { RequestMalformedError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { ResolveApprovalRequest } from '../approvals/schemas';
import type { ApprovalService } from '../approvals/service';
import type { Principal } from '../platform/auth/principal';
import type { ScopeName } from '../platform/auth/scopes';
import { ForbiddenError } from '../platform/errors';
import type { RunDetail } from '../runs/schemas';
import type { WaitpointService } from '../runs/waitpoints';
import { dataOf, textOf } from './skills';
import type { WaitingPoint } from './tasks';

const APPROVE = /^\s*(approve|approved|yes|ok|lgtm)\b/i;
const REJECT = /^\s*(reject|rejected|no|deny|denied)\b/i;

export function need(principal: Principal, scope: ScopeName): void {
  if (!principal.scopes.has(scope)) throw new ForbiddenError(`Missing scope ${scope}`);
}

/**
 * The resolve a reply makes of a pending approval: a data part is `POST /v1/approvals/{id}/resolve`'s
 * body; text starting "approve" (yes, ok, lgtm) approves, "reject" (no, deny) rejects with the rest as
 * notes, and other text to an llm run is RESPOND with it as the model's message.
 */
function resolveBodyOf(message: Message, agent: RunDetail['agent']): ResolveApprovalRequest {
  const data = dataOf(message);
  const text = textOf(message);
  const proposed =
    data !== undefined
      ? data
      : APPROVE.test(text)
        ? { decision: 'APPROVED', ...(text.replace(APPROVE, '').trim() ? { notes: text } : {}) }
        : REJECT.test(text)
          ? { decision: 'REJECTED', notes: text }
          : agent === 'llm' && text
            ? { decision: 'RESPOND', message: text }
            : null;
  if (proposed === null) {
    throw new RequestMalformedError('Reply "approve" or "reject", or send a data part {decision, notes, input}');
  }
  const parsed = ResolveApprovalRequest.safeParse(proposed);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new RequestMalformedError(`${issue.path.join('.') || 'data'}: ${issue.message}`);
  }
  return parsed.data;
}

/**
 * A message carrying the task id of a run that waits: it answers the run's pending approval (needs
 * approvals:write, and separation of duties holds: the dispatching credential is refused) or completes
 * its `event` waitpoint (runs:write) with the data part, or the text.
 */
export async function answerRun(
  deps: { approvals: ApprovalService; waitpoints: WaitpointService },
  principal: Principal,
  run: RunDetail,
  waitpoint: WaitingPoint | null,
  message: Message,
): Promise<void> {
  const pending = run.approvals.find((approval) => approval.status === 'pending');
  if (run.status === 'AWAITING_APPROVAL' && pending) {
    need(principal, 'approvals:write');
    await deps.approvals.resolve(principal, pending.approval_id, resolveBodyOf(message, run.agent));
    return;
  }
  if (run.status === 'WAITING' && waitpoint) {
    need(principal, 'runs:write');
    const data = dataOf(message);
    await deps.waitpoints.complete(principal, waitpoint.waitpoint_id, data !== undefined ? data : textOf(message));
    return;
  }
  throw new UnsupportedOperationError(`The task is not awaiting input (its run is ${run.status})`);
}
