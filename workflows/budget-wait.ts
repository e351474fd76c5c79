import { proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { RunError } from '../src/runs/entities';
import type { StepOutcome } from '../src/runs/step-runner';
import type { RunPlanStep, RunWorkflowInput } from '../src/runs/workflow';
import { databaseLocalActivity } from './activity-options';
import type { approvalWait } from './approval-wait';
import { showWaiting } from './run-status';

const { resumeRun } = proxyLocalActivities<Activities>(databaseLocalActivity);

/** A run whose budget a reviewer would not raise: its error names the step that did not run. */
export const budgetExhausted = (step: RunPlanStep): RunError => ({
  code: 'budget_exhausted',
  message: `Step ${step.stepNo} (${step.tool}) would exceed the run's budget, and its budget approval was rejected`,
  step: step.stepNo,
});

/**
 * Issue 40 item 4: a step's activity answers `NEEDS_APPROVAL` with `reason: 'budget'` when the step
 * would exceed the run's budget; the run then waits on the step's budget approval with the approval
 * wait of step approvals (`approval-wait.ts`, its activities told `budget`), and calls the step again
 * once a reviewer raised the budget. Only a new answer of the step's activity takes this path, so
 * recorded histories replay unchanged.
 */
export function budgetGate(
  approvals: ReturnType<typeof approvalWait>,
  ref: Pick<RunWorkflowInput, 'workspaceId' | 'executionId'>,
) {
  /**
   * Waits for the step's budget approval (`waiting`: a continued run picks up the wait it carried);
   * null once approved and the run resumed, else how the step ends: FAILED `budget_exhausted`, or
   * CANCELLED when the run finished meanwhile.
   */
  async function settle(step: RunPlanStep, waiting: boolean): Promise<StepOutcome | null> {
    const state = await approvals.settle({ ...ref, stepNo: step.stepNo, budget: true }, step, waiting);
    if (state.approval === 'rejected') return { status: 'FAILED', error: budgetExhausted(step) };
    if (state.approval !== 'approved' || !(await resumeRun(ref))) return { status: 'CANCELLED' };
    showWaiting('RUNNING');
    return null;
  }

  return {
    settle,
    /** The step's activity `call`, waiting for a budget approval and calling it again as often as it asks. */
    async gated(step: RunPlanStep, call: () => Promise<StepOutcome>): Promise<StepOutcome> {
      for (;;) {
        const outcome = await call();
        if (outcome.status !== 'NEEDS_APPROVAL' || outcome.reason !== 'budget') return outcome;
        const stopped = await settle(step, false);
        if (stopped) return stopped;
      }
    },
  };
}
