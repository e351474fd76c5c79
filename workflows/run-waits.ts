import { condition, patched, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { LIMITS } from '../src/rules/limits';
import type { RunPlanStep, RunWorkflowInput } from '../src/runs/workflow';
import { databaseLocalActivity } from './activity-options';
import { finished, showStatus } from './run-status';

// Short, idempotent database steps, run inside the workflow task that needs them (as runs.ts's).
const { waitpointState, expireWaitpoint, settleWaitStep, readWaitStep } =
  proxyLocalActivities<Activities>(databaseLocalActivity);

type StepRef = Parameters<Activities['waitpointState']>[0];
type StepOutcome = Awaited<ReturnType<Activities['settleWaitStep']>>;
type WaitState = Awaited<ReturnType<Activities['waitpointState']>>;
/** The least a timer to the waitpoint's expiry waits: the worker's clock may run ahead of the database's. */
const EXPIRY_MIN_WAIT_MS = 250;
/**
 * Each read of the waitpoint also settles the step once the wait is over (`readWaitStep`), where the wait
 * read it (`waitpointState`) and then settled it (`settleWaitStep`): one local activity and transaction
 * fewer after the awaited run's finish. And a step whose activity just held it waits at once, without a
 * first read: the hold read the waitpoint under the run's lock, and a completion after it signals. Histories
 * before it keep the reads.
 */
const SETTLED_IN_READ = 'run-wait-settled-in-read';

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
    /**
     * Waits until the step's waitpoint is settled or the run finished; the step's outcome then. `held`: the
     * waitpoint as the step's activity just held it, which the wait then need not read first.
     */
    async wait(ref: StepRef, step: RunPlanStep, finish: boolean, held?: WaitState): Promise<StepOutcome> {
      const settling = patched(SETTLED_IN_READ);
      const read = async (): Promise<{ state: WaitState; outcome?: StepOutcome }> =>
        settling ? readWaitStep({ ...ref, finish }) : { state: await waitpointState(ref) };
      let seen = settling && held ? { state: held } : await read();
      const waiting = () => !seen.outcome && seen.state.status === 'waiting' && !finished(seen.state.run);
      if (waiting()) showStatus('WAITING');
      let rechecks = 0;
      while (waiting()) {
        if (rechecks >= rechecksPerRun || workflowInfo().continueAsNewSuggested) await continueWaitingAsNew(step);
        const expiresAt = seen.state.expiresAt ? Date.parse(seen.state.expiresAt) : undefined;
        const untilExpiry = expiresAt === undefined ? recheckMs : Math.max(expiresAt - Date.now(), EXPIRY_MIN_WAIT_MS);
        await condition(signal.changed, Math.min(untilExpiry, recheckMs));
        signal.clear();
        seen =
          expiresAt !== undefined && Date.now() >= expiresAt ? { state: await expireWaitpoint(ref) } : await read();
        rechecks++;
      }
      const outcome = seen.outcome ?? (await settleWaitStep({ ...ref, finish }));
      if (outcome.status === 'SUCCEEDED' && !outcome.run) showStatus('RUNNING');
      return outcome;
    },
  };
}
