import { condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { LIMITS } from '../src/limits';
import type { RunWorkflowInput, RunWorkflowResult } from '../src/runs/workflow';
import { runChangedSignal } from '../src/runs/workflow';
import { databaseActivity } from './activity-options';

const { beginRun, requestRunApproval, runApprovalState, resumeRun, finishRun } =
  proxyActivities<Activities>(databaseActivity);
// A step calls a capability, which may call a model: the database preset's retries, a longer timeout.
const { runStep } = proxyActivities<Activities>({ ...databaseActivity, startToCloseTimeout: '5 minutes' });

const FINISHED = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
const finished = (status: string) => FINISHED.includes(status);
const ended = (status: string): RunWorkflowResult => ({ status: status as RunWorkflowResult['status'] });

/**
 * One dispatched run (`run-<execution_id>`). Postgres holds its state: every transition is an
 * activity's conditional update, so a cancel from the API (which writes CANCELLED first) always
 * wins, and the workflow stops at its next step. A step that needs approval creates the approval
 * row and waits for the `runChanged` signal the API sends after resolving it, re-reading the row
 * every `approvalRecheckSeconds` in case the signal was lost (the API died after its commit).
 */
export async function runWorkflow(input: RunWorkflowInput): Promise<RunWorkflowResult> {
  const ref = { workspaceId: input.workspaceId, executionId: input.executionId };
  const recheck = `${input.approvalRecheckSeconds ?? LIMITS.runs.approvalRecheckSeconds} seconds`;
  let changed = false;
  setHandler(runChangedSignal, () => {
    changed = true;
  });

  const plan = await beginRun(ref);
  if (finished(plan.status)) return ended(plan.status);
  for (const step of plan.steps) {
    const stepRef = { ...ref, stepNo: step.stepNo };
    if (step.requiresApproval) {
      let state = await requestRunApproval(stepRef);
      while (state.approval === 'pending' && !finished(state.run)) {
        changed = false;
        await condition(() => changed, recheck);
        state = await runApprovalState(stepRef);
      }
      if (state.approval === 'rejected') {
        const message = `Step ${step.stepNo} (${step.tool}) was rejected`;
        return ended(
          await finishRun({
            ...ref,
            status: 'FAILED',
            error: { code: 'approval_rejected', message, step: step.stepNo },
          }),
        );
      }
      if (state.approval !== 'approved' || !(await resumeRun(ref))) return ended('CANCELLED');
    }
    const outcome = await runStep(stepRef);
    if (outcome.status === 'CANCELLED') return ended('CANCELLED');
    if (outcome.status === 'FAILED') {
      return ended(await finishRun({ ...ref, status: 'FAILED', error: outcome.error ?? null }));
    }
  }
  return ended(await finishRun({ ...ref, status: 'SUCCEEDED', error: null }));
}
