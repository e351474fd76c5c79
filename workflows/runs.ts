import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { findFailureDetails } from '../src/platform/temporal/failures';
import {
  AGENT_ATTRIBUTE,
  RUN_STATUS_ATTRIBUTE,
  WAITING_FOR_ATTRIBUTE,
} from '../src/platform/temporal/search-attributes';
import { LIMITS } from '../src/rules/limits';
import type { RunError } from '../src/runs/entities';
import type { LlmMove, RunPlanStep, RunWorkflowInput, RunWorkflowResult } from '../src/runs/workflow';
import { runChangedSignal } from '../src/runs/workflow';
import { databaseActivity, databaseLocalActivity, planningActivity } from './activity-options';

// The run's transitions are short, idempotent database steps: local activities, run inside the
// workflow task that needs them, spare each a round trip through the server and a workflow task.
const { beginRun, decideStepPolicy, requestRunApproval, runApprovalState, expireRunApproval, resumeRun, finishRun } =
  proxyLocalActivities<Activities>(databaseLocalActivity);
const { planRunStep } = proxyActivities<Activities>(planningActivity);
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

/**
 * WeftWaitingFor names the approval a run waits on and its step's tool (`approval <id>: <tool>`, so an
 * operator finds the run from the approval the API lists), and is cleared when it goes on: in the same
 * upsert as the status, so the command sequence (and replay of older histories) is unchanged. A state
 * recorded before it carried the id names the step number instead.
 */
const showWaiting = (status: string, step?: RunPlanStep, approvalId?: string) =>
  upsertSearchAttributes([
    { key: RUN_STATUS_ATTRIBUTE, value: status },
    {
      key: WAITING_FOR_ATTRIBUTE,
      value:
        step && status === 'AWAITING_APPROVAL' ? `approval ${approvalId ?? `step ${step.stepNo}`}: ${step.tool}` : null,
    },
  ]);

/** WeftRunStatus follows Postgres: set after each transition an activity has committed. */
const showStatus = (status: string) => showWaiting(status);

const ended = (status: string): RunWorkflowResult => {
  showStatus(status);
  return { status: status as RunWorkflowResult['status'] };
};

/** A model call that failed for good (the provider down past its retries): the run's structured error. */
function modelFailure(error: unknown): RunError {
  const details = findFailureDetails(error);
  const reason = (details?.detail as { reason?: unknown } | undefined)?.reason;
  const why = typeof reason === 'string' ? ` (${reason})` : '';
  return { code: details?.code ?? 'model_failed', message: `The model call failed${why}`, step: null };
}

/**
 * One dispatched run (`run-<execution_id>`). Postgres holds its state: every transition is an
 * activity's conditional update, so a cancel from the API (which writes CANCELLED first) always
 * wins, and the workflow stops at its next step. A step that needs approval creates the approval
 * row and waits for the `runChanged` signal the API sends after resolving it, re-reading the row
 * every `approvalRecheckSeconds` in case the signal was lost (the API died after its commit).
 * After `approvalRechecksPerRun` re-reads (or when Temporal suggests it) a waiting run continues
 * as new, carrying its plan and the step it waits on, so a wait of weeks keeps a small history.
 */
export async function runWorkflow(input: RunWorkflowInput): Promise<RunWorkflowResult> {
  try {
    return await driveRun(input);
  } catch (error) {
    // An activity that gave up for good (a domain error; transient ones retry without limit) used to
    // fail the execution and leave the row RUNNING or AWAITING_APPROVAL for ever (H-4): the run is
    // recorded FAILED instead, its charges summed as they stand (refunds are per step). Patched:
    // histories recorded before this change failed the execution here.
    // A local activity's final failure arrives as its ApplicationFailure, a remote one's wrapped.
    const gaveUp = error instanceof ActivityFailure || error instanceof ApplicationFailure;
    if (!gaveUp || !patched(SETTLE_ON_GIVE_UP)) throw error;
    const details = findFailureDetails(error);
    const message = `The run stopped: ${details?.code ?? 'internal'} in one of its steps`;
    const failure: RunError = { code: details?.code ?? 'internal', message, step: null };
    return ended(await finishRun({ ...refOf(input), status: 'FAILED', error: failure }));
  }
}

const SETTLE_ON_GIVE_UP = 'run-settles-failed-on-give-up';
/** Issue 32: each step is decided by the workspace's approval rules before it runs. */
const APPROVAL_RULES = 'run-step-approval-rules';
/**
 * Issue 32 part 3: an approval with a deadline is waited on with a timer to its `expires_at` (read from
 * the row, so a continued run waits for the same instant), then its outcome applied. Only approvals a
 * rule gave a deadline take this path; histories before it never had one.
 */
const APPROVAL_DEADLINES = 'run-approval-deadlines';
const CONTINUED_WAIT_KEPT = 'run-continued-wait-keeps-rule-approval';
/**
 * Issue 27: a step's activity also decides the rules, begins a playbook run (its first step) and
 * finishes it (its last), where the run had a local activity for each: a run of n steps without
 * approvals is its n activities and nothing else. A step the rules send to approval comes back
 * unrun and waits as before.
 */
const FUSED_STEPS = 'run-fused-steps';
/** The least a deadline's timer waits: the worker's clock may run ahead of the database's. */
const DEADLINE_MIN_WAIT_MS = 250;
const refOf = (input: RunWorkflowInput) => ({ workspaceId: input.workspaceId, executionId: input.executionId });

async function driveRun(input: RunWorkflowInput): Promise<RunWorkflowResult> {
  const ref = { workspaceId: input.workspaceId, executionId: input.executionId };
  const recheck = `${input.approvalRecheckSeconds ?? LIMITS.runs.approvalRecheckSeconds} seconds`;
  const recheckMs = (input.approvalRecheckSeconds ?? LIMITS.runs.approvalRecheckSeconds) * 1000;
  const rechecksPerRun = input.approvalRechecksPerRun ?? LIMITS.runs.approvalRechecksPerRun;
  const resume = input.resume;
  let changed = false;
  setHandler(runChangedSignal, () => {
    changed = true;
  });

  let plan: NonNullable<RunWorkflowInput['resume']>['plan'];
  // The llm agent's model calls so far: carried across continue-as-new, or counted from the rows
  // by beginRun when the reconciler resumed the run (0 for a new run, and in histories before it).
  let call = resume?.llmCalls ?? 0;
  const fused = patched(FUSED_STEPS);
  // A dispatched playbook's first step begins the run, unless it waits for an approval first.
  let begin = false;
  if (resume) {
    plan = resume.plan;
  } else {
    upsertSearchAttributes([
      { key: AGENT_ATTRIBUTE, value: input.agent },
      { key: RUN_STATUS_ATTRIBUTE, value: 'QUEUED' },
    ]);
    if (fused && input.plan?.length && !input.plan[0]!.requiresApproval) {
      plan = { maxSteps: input.plan.length, steps: input.plan };
      begin = true;
    } else {
      const begun = await beginRun(ref);
      if (finished(begun.status)) return ended(begun.status);
      showStatus(begun.status);
      plan = { maxSteps: begun.maxSteps, steps: begun.steps };
      call = begun.llmCalls ?? 0;
    }
  }

  /**
   * Waits for the step's approval when it needs one (`waiting`: a continued run picks up the wait
   * it carried, its approval row already made), then runs it; a result when the run ended.
   */
  async function execute(step: RunPlanStep, waiting = false) {
    const stepRef = { ...ref, stepNo: step.stepNo };
    const finish = fused && input.agent === 'playbook' && step.stepNo === plan.steps.at(-1)?.stepNo;
    // A continued run waited on this step's approval, whether the step or the rules asked for it (patched:
    // before, a wait the rules had asked for was dropped when the run continued as new, and the step ran).
    let needsApproval = step.requiresApproval || (waiting && patched(CONTINUED_WAIT_KEPT));
    if (fused && !waiting && !needsApproval) {
      const first = begin;
      begin = false;
      const outcome = await stepActivity(step.stepNo, step.tool)({ ...stepRef, begin: first, decide: true, finish });
      if (outcome.status === 'BLOCKED') {
        // The llm agent gets the refusal as the tool's result and plans again; a playbook stops here.
        if (input.agent === 'llm') return undefined;
        return ended(await finishRun({ ...ref, status: 'FAILED', error: outcome.error ?? null }));
      }
      if (outcome.status !== 'NEEDS_APPROVAL') {
        if (first) showStatus('RUNNING');
        return afterStep(outcome);
      }
      needsApproval = true;
    } else if (!waiting && patched(APPROVAL_RULES)) {
      // A continued run's step was decided before its wait began. Histories before the rules skip this.
      const decided = await decideStepPolicy(stepRef);
      if (decided.action === 'block') {
        // The llm agent gets the refusal as the tool's result and plans again; a playbook stops here.
        if (input.agent === 'llm') return undefined;
        return ended(await finishRun({ ...ref, status: 'FAILED', error: decided.error ?? null }));
      }
      needsApproval = decided.action === 'require_approval';
    }
    if (needsApproval) {
      let state = waiting ? await runApprovalState(stepRef) : await requestRunApproval(stepRef);
      if (!waiting) showWaiting(state.run, step, state.approvalId);
      let rechecks = 0;
      // Cleared just before each read, never before the wait: a signal that came while the approval
      // was being requested (its answer already stale) must still end the wait at once.
      while (state.approval === 'pending' && !finished(state.run)) {
        if (rechecks >= rechecksPerRun || workflowInfo().continueAsNewSuggested) {
          // The new run re-reads the row first, so a resolve signalled meanwhile is not lost.
          await continueAsNew<typeof runWorkflow>({ ...input, resume: { plan, waiting: step, llmCalls: call } });
        }
        const expiresAt = state.expiresAt ? Date.parse(state.expiresAt) : undefined;
        if (expiresAt !== undefined && patched(APPROVAL_DEADLINES)) {
          // Workflow time is deterministic (the task's start), so the timer replays as it was set.
          const untilExpiry = Math.max(expiresAt - Date.now(), DEADLINE_MIN_WAIT_MS);
          await condition(() => changed, Math.min(untilExpiry, recheckMs));
          changed = false;
          state = Date.now() >= expiresAt ? await expireRunApproval(stepRef) : await runApprovalState(stepRef);
        } else {
          await condition(() => changed, recheck);
          changed = false;
          state = await runApprovalState(stepRef);
        }
        rechecks++;
      }
      if (state.approval === 'rejected') {
        // A deadline that rejected (issue 32 part 3) fails the run as a person's rejection does.
        const expired = state.expired === true;
        const message = expired
          ? `Step ${step.stepNo} (${step.tool}) was not approved before its deadline`
          : `Step ${step.stepNo} (${step.tool}) was rejected`;
        return ended(
          await finishRun({
            ...ref,
            status: 'FAILED',
            error: { code: expired ? 'approval_expired' : 'approval_rejected', message, step: step.stepNo },
          }),
        );
      }
      // A reviewer's RESPOND (issue 32 part 2; llm runs only, a state older histories never saw): the
      // step was recorded with the message instead of running, and the model plans again after it.
      const responded = state.approval === 'responded';
      if ((state.approval !== 'approved' && !responded) || !(await resumeRun(ref))) return ended('CANCELLED');
      showWaiting('RUNNING');
      if (responded) return undefined;
    }
    return afterStep(await stepActivity(step.stepNo, step.tool)(fused ? { ...stepRef, finish } : stepRef));
  }

  /** A run's result once a step ended it (failed, cancelled, or finished it as its last), else nothing. */
  async function afterStep(outcome: Awaited<ReturnType<ReturnType<typeof stepActivity>>>) {
    if (outcome.status === 'CANCELLED') return ended('CANCELLED');
    if (outcome.status === 'FAILED') {
      return ended(await finishRun({ ...ref, status: 'FAILED', error: outcome.error ?? null }));
    }
    if (outcome.run) return ended(outcome.run);
    return undefined;
  }

  if (input.agent === 'llm') {
    if (resume) {
      const result = await execute(resume.waiting, true);
      if (result) return result;
      call++;
    }
    // Each planning call either chooses a step, records a refused call for the model to see, or answers.
    for (; call < plan.maxSteps; call++) {
      let move: LlmMove;
      try {
        move = await planRunStep(ref);
      } catch (error) {
        return ended(await finishRun({ ...ref, status: 'FAILED', error: modelFailure(error) }));
      }
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

  const first = resume ? plan.steps.findIndex((step) => step.stepNo === resume.waiting.stepNo) : 0;
  for (const [at, step] of plan.steps.slice(first).entries()) {
    const result = await execute(step, Boolean(resume) && at === 0);
    if (result) return result;
  }
  return ended(await finishRun({ ...ref, status: 'SUCCEEDED', error: null }));
}
