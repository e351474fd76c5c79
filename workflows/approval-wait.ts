import { condition, patched, proxyLocalActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { LIMITS } from '../src/rules/limits';
import type { RunError } from '../src/runs/entities';
import type { RunPlanStep, RunWorkflowInput } from '../src/runs/workflow';
import { runChangedSignal } from '../src/runs/workflow';
import { databaseLocalActivity } from './activity-options';
import { finished, showWaiting } from './run-status';

// Short, idempotent database steps, run inside the workflow task that needs them (as runs.ts's).
const { requestRunApproval, runApprovalState, expireRunApproval } =
  proxyLocalActivities<Activities>(databaseLocalActivity);

type StepRef = Parameters<Activities['runApprovalState']>[0];
/** The approval row as the wait reads it (src/runs/steps.ts `ApprovalState`). */
export type ApprovalState = Awaited<ReturnType<Activities['runApprovalState']>>;

/**
 * Issue 32 part 3: an approval with a deadline is waited on with a timer to its `expires_at` (read from
 * the row, so a continued run waits for the same instant), then its outcome applied. Only approvals a
 * rule gave a deadline take this path; histories before it never had one.
 */
export const APPROVAL_DEADLINES = 'run-approval-deadlines';
/** The least a deadline's timer waits: the worker's clock may run ahead of the database's. */
const DEADLINE_MIN_WAIT_MS = 250;

/**
 * The wait for a step's approval, a state machine over the approval row in Postgres: the `runChanged`
 * signal only says "re-read now" (its handler sets a flag), a re-check timer covers a lost signal (the
 * API died after its commit), a deadline's timer expires the approval, and after
 * `approvalRechecksPerRun` re-reads (or when Temporal suggests it) the run continues as new, carrying
 * the step it waits on, so a wait of weeks keeps a small history. Made once per run, at its start: the
 * signal's handler is set before anything else happens.
 */
export function approvalWait(
  input: Pick<RunWorkflowInput, 'approvalRecheckSeconds' | 'approvalRechecksPerRun'>,
  /** Continues the run as new, waiting on `step`'s approval `ref` names (never returns). */
  continueWaitingAsNew: (step: RunPlanStep, ref: StepRef) => Promise<never>,
) {
  const recheck = `${input.approvalRecheckSeconds ?? LIMITS.runs.approvalRecheckSeconds} seconds`;
  const recheckMs = (input.approvalRecheckSeconds ?? LIMITS.runs.approvalRecheckSeconds) * 1000;
  const rechecksPerRun = input.approvalRechecksPerRun ?? LIMITS.runs.approvalRechecksPerRun;
  let changed = false;
  setHandler(runChangedSignal, () => {
    changed = true;
  });

  return {
    /** The `runChanged` signal's flag, which a waitpoint's wait shares (run-waits.ts): set, and cleared. */
    signal: {
      changed: () => changed,
      clear: () => {
        changed = false;
      },
    },

    /**
     * Requests the step's approval (or, `waiting`, picks up the one a continued run carried, its row
     * already made) and waits until it is settled or the run finished; the state it ended in.
     */
    async settle(ref: StepRef, step: RunPlanStep, waiting: boolean): Promise<ApprovalState> {
      let state = waiting ? await runApprovalState(ref) : await requestRunApproval(ref);
      if (!waiting) showWaiting(state.run, step, state.approvalId);
      let rechecks = 0;
      // Cleared just before each read, never before the wait: a signal that came while the approval
      // was being requested (its answer already stale) must still end the wait at once.
      while (state.approval === 'pending' && !finished(state.run)) {
        if (rechecks >= rechecksPerRun || workflowInfo().continueAsNewSuggested) {
          // The new run re-reads the row first, so a resolve signalled meanwhile is not lost.
          await continueWaitingAsNew(step, ref);
        }
        const expiresAt = state.expiresAt ? Date.parse(state.expiresAt) : undefined;
        if (expiresAt !== undefined && patched(APPROVAL_DEADLINES)) {
          // Workflow time is deterministic (the task's start), so the timer replays as it was set.
          const untilExpiry = Math.max(expiresAt - Date.now(), DEADLINE_MIN_WAIT_MS);
          await condition(() => changed, Math.min(untilExpiry, recheckMs));
          changed = false;
          state = Date.now() >= expiresAt ? await expireRunApproval(ref) : await runApprovalState(ref);
        } else {
          await condition(() => changed, recheck);
          changed = false;
          state = await runApprovalState(ref);
        }
        rechecks++;
      }
      return state;
    },
  };
}

/**
 * The run's error for a rejected approval: a deadline that rejected (issue 32 part 3) fails the run
 * as a person's rejection does.
 */
export function rejectionOf(step: RunPlanStep, state: ApprovalState): RunError {
  const expired = state.expired === true;
  const message = expired
    ? `Step ${step.stepNo} (${step.tool}) was not approved before its deadline`
    : `Step ${step.stepNo} (${step.tool}) was rejected`;
  return { code: expired ? 'approval_expired' : 'approval_rejected', message, step: step.stepNo };
}
