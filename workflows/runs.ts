import {
  ActivityFailure,
  ApplicationFailure,
  continueAsNew,
  patched,
  proxyActivities,
  proxyLocalActivities,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { findFailureDetails } from '../src/platform/temporal/failures';
import { AGENT_ATTRIBUTE, RUN_STATUS_ATTRIBUTE } from '../src/platform/temporal/search-attributes';
import type { RunError } from '../src/runs/entities';
import type { LlmMove, RunPlanStep, RunWorkflowInput, RunWorkflowResult } from '../src/runs/workflow';
import { databaseActivity, databaseLocalActivity, planningActivity } from './activity-options';
import { approvalWait, rejectionOf } from './approval-wait';
import { budgetGate } from './budget-wait';
import { ended, finished, showStatus, showWaiting } from './run-status';
import { runWaits } from './run-waits';

// The run's transitions are short, idempotent database steps: local activities, run inside the
// workflow task that needs them, spare each a round trip through the server and a workflow task.
const { beginRun, decideStepPolicy, resumeRun, finishRun } = proxyLocalActivities<Activities>(databaseLocalActivity);
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
 * as new, carrying its plan and the step it waits on, so a wait of weeks keeps a small history
 * (the wait: approval-wait.ts).
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

// The run's patch markers; the wait's own, APPROVAL_DEADLINES, is in approval-wait.ts. When each one is
// deprecated and then removed: docs/workflow-versions.md.
const SETTLE_ON_GIVE_UP = 'run-settles-failed-on-give-up';
/** Issue 32: each step is decided by the workspace's approval rules before it runs. */
const APPROVAL_RULES = 'run-step-approval-rules';
const CONTINUED_WAIT_KEPT = 'run-continued-wait-keeps-rule-approval';
/**
 * Issue 27: a step's activity also decides the rules, begins a playbook run (its first step) and
 * finishes it (its last), where the run had a local activity for each: a run of n steps without
 * approvals is its n activities and nothing else. A step the rules send to approval comes back
 * unrun and waits as before.
 */
const FUSED_STEPS = 'run-fused-steps';
type StepResult = Awaited<ReturnType<Activities['runStep']>>;
const refOf = (input: RunWorkflowInput) => ({ workspaceId: input.workspaceId, executionId: input.executionId });

async function driveRun(input: RunWorkflowInput): Promise<RunWorkflowResult> {
  const ref = { workspaceId: input.workspaceId, executionId: input.executionId };
  const resume = input.resume;
  let plan: NonNullable<RunWorkflowInput['resume']>['plan'];
  // The llm agent's model calls so far: carried across continue-as-new, or counted from the rows
  // by beginRun when the reconciler resumed the run (0 for a new run, and in histories before it).
  let call = resume?.llmCalls ?? 0;
  const approvals = approvalWait(input, (waiting, on) =>
    continueAsNew<typeof runWorkflow>({
      ...input,
      resume: { plan, waiting, llmCalls: call, ...(on.budget ? { budget: true as const } : {}) },
    }),
  );
  // Issue 40 item 4: a step over the run's budget waits for a budget approval, then is called again.
  const budget = budgetGate(approvals, ref);
  // Issue 40 item 3: a wait tool's step waits on its waitpoint; a long wait continues as new, still held.
  const waits = runWaits(input, approvals.signal, (waiting) =>
    continueAsNew<typeof runWorkflow>({ ...input, resume: { plan, waiting, llmCalls: call, held: true } }),
  );
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
    // A wait tool's step comes back WAITING: its wait, then its outcome (only new paths: no history has one).
    const after = async (outcome: StepResult) =>
      afterStep(outcome.status === 'WAITING' ? await waits.wait(stepRef, step, finish, outcome.wait) : outcome);
    // A run continued as new during a wait step's wait goes on waiting on the step's waitpoint.
    if (waiting && resume?.held) return afterStep(await waits.wait(stepRef, step, finish));
    // A continued run waited on this step's approval, whether the step or the rules asked for it (patched:
    // before, a wait the rules had asked for was dropped when the run continued as new, and the step ran).
    let needsApproval = step.requiresApproval || (waiting && patched(CONTINUED_WAIT_KEPT));
    if (fused && !waiting && !needsApproval) {
      const first = begin;
      begin = false;
      const outcome = await budget.gated(step, () =>
        stepActivity(step.stepNo, step.tool)({ ...stepRef, begin: first, decide: true, finish }),
      );
      if (outcome.status === 'BLOCKED') {
        // The llm agent gets the refusal as the tool's result and plans again; a playbook stops here.
        if (input.agent === 'llm') return undefined;
        return ended(await finishRun({ ...ref, status: 'FAILED', error: outcome.error ?? null }));
      }
      if (outcome.status !== 'NEEDS_APPROVAL') {
        if (first) showStatus('RUNNING');
        return after(outcome);
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
      const state = await approvals.settle(stepRef, step, waiting);
      if (state.approval === 'rejected') {
        return ended(await finishRun({ ...ref, status: 'FAILED', error: rejectionOf(step, state) }));
      }
      // A reviewer's RESPOND (issue 32 part 2; llm runs only, a state older histories never saw): the
      // step was recorded with the message instead of running, and the model plans again after it.
      const responded = state.approval === 'responded';
      if ((state.approval !== 'approved' && !responded) || !(await resumeRun(ref))) return ended('CANCELLED');
      showWaiting('RUNNING');
      if (responded) return undefined;
    }
    return after(
      await budget.gated(step, () => stepActivity(step.stepNo, step.tool)(fused ? { ...stepRef, finish } : stepRef)),
    );
  }

  /** The step a continued run waited on: its budget approval's wait (then the step as new), or its approval's. */
  async function resumeWaiting(step: RunPlanStep) {
    if (!resume?.budget) return execute(step, true);
    const stopped = await budget.settle(step, true);
    return stopped ? afterStep(stopped) : execute(step);
  }

  /** A run's result once a step ended it (failed, cancelled, or finished it as its last), else nothing. */
  async function afterStep(outcome: StepResult) {
    if (outcome.status === 'CANCELLED') return ended('CANCELLED');
    if (outcome.status === 'FAILED') {
      return ended(await finishRun({ ...ref, status: 'FAILED', error: outcome.error ?? null }));
    }
    if (outcome.run) return ended(outcome.run);
    return undefined;
  }

  if (input.agent === 'llm') {
    if (resume) {
      const result = await resumeWaiting(resume.waiting);
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
    const result = resume && at === 0 ? await resumeWaiting(step) : await execute(step);
    if (result) return result;
  }
  return ended(await finishRun({ ...ref, status: 'SUCCEEDED', error: null }));
}
