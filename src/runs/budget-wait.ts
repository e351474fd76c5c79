import type { EntityManager } from 'typeorm';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { overrunOf } from './budget';
import { budgetApprovalOfStep, requestBudgetApproval } from './budget-approvals';
import { callbackApprovalRequested } from './callbacks';
import type { RunStatus } from './entities';
import { FINISHED_STATUSES } from './entities';
import * as executionRepo from './execution-repository';
import type { ApprovalState } from './step-approvals';
import * as stepRepo from './step-repository';

const isFinished = (status: RunStatus) => FINISHED_STATUSES.includes(status);

/**
 * The run workflow's approval wait for a budget approval (issue 40 item 4), its activities' half: the
 * same wait as a step's approval (`step-approvals.ts`), over `run_budget_approvals`. A budget approval
 * has no deadline, so nothing ever expires it.
 */
export function createBudgetWait(deps: {
  uow: UnitOfWork;
  afterCommit: <T>(workspaceId: string, work: (m: EntityManager) => Promise<T>) => Promise<T>;
}) {
  const read = async (m: EntityManager, executionId: string, stepNo: number): Promise<ApprovalState> => {
    const run = await executionRepo.mustFindExecution(m, executionId);
    const approval = await budgetApprovalOfStep(m, executionId, stepNo);
    return { run: run.status, approval: approval?.status ?? 'pending', approvalId: approval?.id };
  };
  return {
    /**
     * Creates the step's budget approval (PENDING) once, with the spend as it stands, and moves the run
     * to AWAITING_APPROVAL. A step that fits after all (its budget raised meanwhile) is answered approved.
     */
    requestBudgetApproval: (workspaceId: string, executionId: string, stepNo: number): Promise<ApprovalState> =>
      deps.afterCommit(workspaceId, async (m) => {
        const run = await executionRepo.mustFindExecution(m, executionId);
        if (isFinished(run.status)) return { run: run.status, approval: 'cancelled' };
        const step = (await stepRepo.findStep(m, executionId, stepNo))!;
        const earlier = await budgetApprovalOfStep(m, executionId, stepNo);
        if (!earlier) {
          const overrun = await overrunOf(m, run, step);
          if (!overrun) return { run: run.status, approval: 'approved' };
          const { approval, created } = await requestBudgetApproval(m, step, overrun);
          // A run's callbacks hear of it as of a step's approval (their reviewer's tool reads the inbox).
          if (created) {
            await callbackApprovalRequested(m, {
              id: approval.id,
              workspaceId,
              executionId,
              stepNo,
              tool: step.tool,
              requestedAt: approval.requested_at,
              expiresAt: null,
              approvers: null,
            });
          }
        }
        const state = await read(m, executionId, stepNo);
        if (state.approval === 'pending') await executionRepo.setStatus(m, executionId, 'AWAITING_APPROVAL');
        return { ...state, run: (await executionRepo.mustFindExecution(m, executionId)).status };
      }),

    /** The run's and the budget approval's status, re-read after a signal or the re-check timer. */
    budgetApprovalState: (workspaceId: string, executionId: string, stepNo: number): Promise<ApprovalState> =>
      deps.uow({ workspaceId }, (m) => read(m, executionId, stepNo)),
  };
}
