import type { EntityManager } from 'typeorm';
import type { RunApproval } from '../approvals/entities';
import type { PolicyDecision } from '../approvals/rules';
import { decideStep, readApprovalRules } from '../approvals/rules';
import type { FilterPool } from '../filters/pool';
import { ValidationFailedError } from '../platform/errors';
import type { RunExecution } from './entities';
import { findStep } from './step-repository';

// A filter that cannot run counts as matched with at least require_approval (decideStep): fail closed.
const NO_FILTERS: Pick<FilterPool, 'evaluate'> = {
  evaluate: () => Promise.resolve({ result: 'error', error: 'filter_failed: no filter pool here' }),
};

const ruleOf = (decision: PolicyDecision) =>
  `version ${decision.version}, ${decision.rule === null ? 'default action' : `rule ${decision.rule}`}`;

/**
 * An approval's edited input judged by the workspace's approval rules in force, as if it were the
 * step's own input (NM-4): the step runs the edit as its dispatcher, so a reviewer must not be able to
 * turn a gated call into one the rules block, or into one they send to other people. A `block` is a 422
 * naming the rule as a blocked step's failure does; a `require_approval` whose rule names approvers is a
 * 422 unless this resolver alone satisfies them (one approver needed, and they are named or any member
 * is): those people make the edit, or the input is approved as asked and the edit dispatched as a run of
 * its own. Nothing is written either way, and the approval still waits.
 *
 * Inside the resolve's transaction, before any lock: a rule's input filter runs in the filter pool under
 * its budget, which holds nothing but the open transaction.
 */
export async function judgeEdit(
  m: EntityManager,
  input: {
    run: Pick<RunExecution, 'agent'>;
    approval: Pick<RunApproval, 'executionId' | 'stepNo' | 'tool'>;
    edit: Record<string, unknown>;
    resolverUserId: string;
    filters?: Pick<FilterPool, 'evaluate'>;
  },
): Promise<PolicyDecision> {
  const { run, approval, edit } = input;
  const step = await findStep(m, approval.executionId, approval.stepNo);
  const decision = await decideStep(
    await readApprovalRules(m),
    {
      tool: approval.tool,
      input: edit,
      requiresApproval: step?.requiresApproval ?? false,
      agent: run.agent,
      workspaceId: step?.workspaceId,
    },
    input.filters ?? NO_FILTERS,
  );
  const refuse = (msg: string, type: string) => {
    throw new ValidationFailedError([{ loc: ['body', 'input'], msg, type }]);
  };
  if (decision.action === 'block') {
    refuse(
      `The workspace's approval rules (${ruleOf(decision)}) block ${approval.tool} with this input; it did not run`,
      'blocked_by_policy',
    );
  }
  const approvers = decision.action === 'require_approval' ? decision.approvers : undefined;
  const satisfied =
    !approvers ||
    (approvers.min === 1 && (approvers.from === 'any_member' || approvers.from.includes(input.resolverUserId)));
  if (!satisfied) {
    const who = approvers!.from === 'any_member' ? 'members' : approvers!.from.join(', ');
    refuse(
      `With this input ${approval.tool} needs the approval the rules ask for (${ruleOf(decision)}): ` +
        `${approvers!.min} of ${who}. They may make this edit; or approve the input as asked, or reject it ` +
        'and dispatch a run with the edit',
      'approval_required',
    );
  }
  return decision;
}
