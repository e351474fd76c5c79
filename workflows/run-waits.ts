import { condition, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { LIMITS } from '../src/rules/limits';
import type { RunPlanStep, RunWorkflowInput } from '../src/runs/workflow';
import { databaseLocalActivity } from './activity-options';
import { finished, showStatus } from './run-status';

// Short, idempotent database steps, run inside the workflow task that needs them (as runs.ts's).
const { waitpointState, expireWaitpoint, settleWaitStep } = proxyLocalActivities<Activities>(databaseLocalActivity);

type StepRef = Parameters<Activities['waitpointState']>[0];
type StepOutcome = Awaited<ReturnType<Activities['settleWaitStep']>>;
/** The least a timer to the waitpoint's expiry waits: the worker's clock may run ahead of the database's. */
const EXPIRY_MIN_WAIT_MS = 250;

/**
 * Issue 40 item 3: the wait of a step whose tool waits (`run.sleep`, `run.wait_for`, `runs.wait`), a
 * state machine over its waitpoint row as the approval wait is over its approval: the `runChanged`
 * signal (shared with that wait) says "re-read now", a re-check timer covers a lost signal, a timer
 * to `expires_at` ends a sleep or times the wait out, and after `approvalRechecksPerRun` re-reads (or
 * when Temporal suggests it) the run continues as new, carrying the step (`resume.held`). Then the
 * step is settled with the waitpoint's outcome.
 */
export function runWaits(
  input: Pick<RunWorkflowInput, 'approvalRecheckSeconds' | 'approvalRechecksPerRun'>,
  signal: { changed: () => boolean; clear: () => void },
  /** Continues the run as new, still waiting on `step`'s waitpoint (never returns). */
  continueWaitingAsNew: (step: RunPlanStep) => Promise<never>,
) {
  const recheckMs = (input.approvalRecheckSeconds ?? LIMITS.runs.approvalRecheckSeconds) * 1000;
  const rechecksPerRun = input.approvalRechecksPerRun ?? LIMITS.runs.approvalRechecksPerRun;
  return {
    /** Waits until the step's waitpoint is settled or the run finished; the step's outcome then. */
    async wait(ref: StepRef, step: RunPlanStep, finish: boolean): Promise<StepOutcome> {
      let state = await waitpointState(ref);
      if (state.status === 'waiting' && !finished(state.run)) showStatus('WAITING');
      let rechecks = 0;
      while (state.status === 'waiting' && !finished(state.run)) {
        if (rechecks >= rechecksPerRun || workflowInfo().continueAsNewSuggested) await continueWaitingAsNew(step);
        const expiresAt = state.expiresAt ? Date.parse(state.expiresAt) : undefined;
        const untilExpiry = expiresAt === undefined ? recheckMs : Math.max(expiresAt - Date.now(), EXPIRY_MIN_WAIT_MS);
        await condition(signal.changed, Math.min(untilExpiry, recheckMs));
        signal.clear();
        state =
          expiresAt !== undefined && Date.now() >= expiresAt ? await expireWaitpoint(ref) : await waitpointState(ref);
        rechecks++;
      }
      const outcome = await settleWaitStep({ ...ref, finish });
      if (outcome.status === 'SUCCEEDED' && !outcome.run) showStatus('RUNNING');
      return outcome;
    },
  };
}
