import type { ApprovalSubject } from '../approvals/subject';
import { ConflictError, ValidationFailedError } from '../platform/errors';
import { budgetEntry } from './audit';
import * as auditRepo from './audit-repository';
import { exceededLimits, spentBy } from './budget';
import type { BudgetApprovalRecord } from './budget-approvals';
import {
  budgetApprovalRow,
  findBudgetApproval,
  listBudgetApprovals,
  lockBudgetApproval,
  raiseBudget,
  resolveBudgetApproval,
} from './budget-approvals';
import { recordRunEvent } from './event-repository';
import * as executionRepo from './execution-repository';
import type { WakeReason } from './wake';

const refuse = (loc: (string | number)[], msg: string): never => {
  throw new ValidationFailedError([{ loc: ['body', ...loc], msg, type: 'value_error' }]);
};

/**
 * A run's budget as an approval's subject (issue 40 item 4): the run's dispatcher asked for it, so the
 * separation rules of step approvals apply. APPROVED raises the budget by `edits` (each limit the step
 * exceeds, now, raised so it fits: 422 otherwise) and lets the step run; REJECTED ends the run FAILED
 * `budget_exhausted` (the workflow does, nothing charged: the step never ran). Decided once, under the
 * run's lock then the approval's; a second resolve, or one after the run finished, is 409.
 */
export function budgetApprovals(deps: {
  wake: (executionId: string, reason: WakeReason) => Promise<void>;
}): ApprovalSubject<BudgetApprovalRecord> {
  return {
    kind: 'budget',

    list: async (m, query) => (await listBudgetApprovals(m, query)).map(budgetApprovalRow),

    async describe(m, approvalId) {
      const found = await findBudgetApproval(m, approvalId);
      return found ? budgetApprovalRow(found) : null;
    },

    async requester(m, approvalId) {
      const found = await findBudgetApproval(m, approvalId);
      if (!found) return null;
      const run = await executionRepo.mustFindExecution(m, found.execution_id);
      return { requester: { userId: run.userId, credential: run.principal.credential }, asked: found };
    },

    async onResolved(m, principal, asked, body) {
      if (body.decision === 'RESPOND') refuse(['decision'], 'A budget approval is approved or rejected');
      if (body.input !== undefined) refuse(['input'], 'A budget approval takes a raised budget (`edits`), no input');
      if (body.decision === 'APPROVED' && body.edits === undefined) {
        refuse(['edits'], 'APPROVED raises the budget: give the raised limits in `edits`');
      }
      await executionRepo.lockExecution(m, asked.execution_id);
      const found = (await lockBudgetApproval(m, asked.id))!;
      if (found.status !== 'pending') {
        throw new ConflictError({
          error: 'approval_resolved',
          status: found.status,
          message: 'The approval was already resolved',
        });
      }
      const edits = body.edits ?? null;
      if (edits) {
        // Judged now, not when it was asked: the run's clock went on meanwhile.
        const run = await executionRepo.mustFindExecution(m, found.execution_id);
        const spent = await spentBy(m, found.execution_id);
        const raised = { ...(run.budget ?? {}), ...edits };
        const least = {
          max_credits: spent.credits + found.step_credits,
          max_steps: spent.steps + 1,
          max_duration_seconds: spent.duration_seconds + 1,
        };
        for (const limit of exceededLimits(raised, spent, found.step_credits)) {
          refuse(['edits', limit], `Must be at least ${least[limit]} for step ${found.step_no} (${found.tool}) to run`);
        }
      }
      const status = body.decision === 'APPROVED' ? 'approved' : 'rejected';
      await resolveBudgetApproval(m, {
        approvalId: found.id,
        status,
        userId: principal.userId,
        credential: principal.credential,
        notes: body.notes ?? null,
        edits,
      });
      if (edits) await raiseBudget(m, found.execution_id, edits);
      // The decision is a link of the run's chain, as the row now reads (the run's lock is held).
      const audit = await auditRepo.appendAuditLocked(m, {
        workspaceId: found.workspace_id,
        executionId: found.execution_id,
        kind: 'BUDGET',
        refId: found.id,
        entry: budgetEntry((await findBudgetApproval(m, found.id))!),
      });
      await recordRunEvent(m, found.execution_id, {
        type: 'approval.resolved',
        data: {
          approval_id: found.id,
          step_no: found.step_no,
          status,
          resolved_by: principal.userId,
          notes: body.notes ?? null,
          subject: 'budget',
        },
        audit,
      });
      return {
        response: {
          approval_id: found.id,
          decision: body.decision,
          execution_id: found.execution_id,
          status,
          approvals_remaining: 0,
        },
        afterCommit: () => deps.wake(found.execution_id, 'approval_resolved'),
      };
    },
  };
}
