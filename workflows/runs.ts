import { condition, proxyActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { LIMITS } from '../src/limits';
import { AGENT_ATTRIBUTE, RUN_STATUS_ATTRIBUTE } from '../src/platform/temporal/search-attributes';
import type { RunWorkflowInput, RunWorkflowResult } from '../src/runs/workflow';
import { runChangedSignal } from '../src/runs/workflow';
import { databaseActivity, modelActivity } from './activity-options';

const { beginRun, requestRunApproval, runApprovalState, resumeRun, finishRun } =
  proxyActivities<Activities>(databaseActivity);
const { planRunStep } = proxyActivities<Activities>(modelActivity);
// A step calls a capability, which may call a model: the database preset's retries, a longer timeout.
// It heartbeats, so a step whose worker died is retried within seconds, not after those 5 minutes.
// Each step's activity is summarised by its tool, so the UI's timeline reads without opening payloads.
const stepActivity = (stepNo: number, tool: string) =>
  proxyActivities<Activities>({
    ...databaseActivity,
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: '5 seconds',
    summary: `step ${stepNo}: ${tool}`,
  }).runStep;

const FINISHED = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
const finished = (status: string) => FINISHED.includes(status);

/** WeftRunStatus follows Postgres: set after each transition an activity has committed. */
const showStatus = (status: string) => upsertSearchAttributes([{ key: RUN_STATUS_ATTRIBUTE, value: status }]);

const ended = (status: string): RunWorkflowResult => {
  showStatus(status);
  return { status: status as RunWorkflowResult['status'] };
};

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

  upsertSearchAttributes([
    { key: AGENT_ATTRIBUTE, value: input.agent },
    { key: RUN_STATUS_ATTRIBUTE, value: 'QUEUED' },
  ]);
  const plan = await beginRun(ref);
  if (finished(plan.status)) return ended(plan.status);
  showStatus(plan.status);

  /** Waits for the step's approval when it needs one, then runs it; a result when the run ended. */
  async function execute(step: { stepNo: number; tool: string; requiresApproval: boolean }) {
    const stepRef = { ...ref, stepNo: step.stepNo };
    if (step.requiresApproval) {
      let state = await requestRunApproval(stepRef);
      showStatus(state.run);
      // Cleared just before each read, never before the wait: a signal that came while the approval
      // was being requested (its answer already stale) must still end the wait at once.
      while (state.approval === 'pending' && !finished(state.run)) {
        await condition(() => changed, recheck);
        changed = false;
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
      showStatus('RUNNING');
    }
    const outcome = await stepActivity(step.stepNo, step.tool)(stepRef);
    if (outcome.status === 'CANCELLED') return ended('CANCELLED');
    if (outcome.status === 'FAILED') {
      return ended(await finishRun({ ...ref, status: 'FAILED', error: outcome.error ?? null }));
    }
    return undefined;
  }

  if (input.agent === 'llm') {
    // Each planning call either chooses a step, records a refused call for the model to see, or answers.
    for (let call = 0; call < plan.maxSteps; call++) {
      const move = await planRunStep(ref);
      if (move.kind === 'final') {
        return ended(await finishRun({ ...ref, status: 'SUCCEEDED', error: null, answer: move.answer }));
      }
      if (move.kind === 'step') {
        const result = await execute(move);
        if (result) return result;
      }
    }
    const message = `No final answer within ${plan.maxSteps} steps`;
    return ended(
      await finishRun({ ...ref, status: 'FAILED', error: { code: 'max_steps_exceeded', message, step: null } }),
    );
  }

  for (const step of plan.steps) {
    const result = await execute(step);
    if (result) return result;
  }
  return ended(await finishRun({ ...ref, status: 'SUCCEEDED', error: null }));
}
