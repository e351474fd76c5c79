import type { PolicyDecision, RuleAction } from '../approvals/rules';
import {
  blockedByPolicy,
  CURRENT_RULES_SQL,
  decideStep,
  decideStepWithoutFilters,
  readApprovalRules,
  rulesFromRow,
} from '../approvals/rules';
import type { CapabilityService } from '../capabilities/service';
import type { FilterPool } from '../filters/pool';
import { thaw } from '../platform/auth/stored-principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { DomainError, isRetryableRefusal, NotFoundError } from '../platform/errors';
import type { OutboxRelay } from '../platform/outbox/relay';
import { toolSpan, withinAgentSpan } from '../platform/telemetry/genai';
import { uuidV5 } from '../platform/uuid-v5';
import { overrunOf } from './budget';
import { pinsOf } from './connector-pins';
import type { RunError, RunExecution, RunStatus, RunStep } from './entities';
import { FINISHED_STATUSES } from './entities';
import * as executionRepo from './execution-repository';
import { credentialRevoked, RUN_IDENTITY_LIVE_SQL } from './identity';
import type { GateRelease } from './priority-gate';
import { createStepCompletion } from './step-completion';
import type { InputToResolve } from './step-input';
import { createStepInputResolver, evaluateInput, inputToResolve, writeResolvedInput } from './step-input';
import * as stepRepo from './step-repository';
import type { WaitState } from './wait-steps';
import { createWaitSteps } from './wait-steps';
import { isWaitTool } from './waitpoints';
import type { WaiterWaker } from './wake';

/** A step's idempotency key, for its capability call and its charge. */
export const runStepKey = (executionId: string, stepNo: number) => `${executionId}:${stepNo}`;

// A fixed namespace for the steps' correlation ids (a random v4 uuid, chosen once).
const STEP_CORRELATION_NAMESPACE = 'f4a7c1e2-5b0d-4c39-9e61-2d8a7b3c5f10';

/**
 * A step's correlation id: a UUIDv5 of its key (RFC 9562 §5.5), so each step of a run has its own
 * (two `ontology.ask` steps both claim one, M-6) and a retried step finds its own again.
 */
export const stepCorrelationId = (executionId: string, stepNo: number): string =>
  uuidV5(STEP_CORRELATION_NAMESPACE, runStepKey(executionId, stepNo));

const isFinished = (status: RunStatus) => FINISHED_STATUSES.includes(status);

/**
 * Another attempt of this very step holds its idempotency key (a slow attempt the server gave up
 * on, M-7): this one retries until the key is free, then replays what the other committed.
 */
const isKeyInUse = (error: DomainError) =>
  error.code === 'conflict' && (error.detail as { error?: unknown } | null)?.error === 'idempotency_key_in_use';

export interface StepOutcome {
  /**
   * `NEEDS_APPROVAL` and `BLOCKED` only when the step was asked to `decide`, or (`reason: 'budget'`) when
   * it would exceed the run's budget: it did not run. `WAITING`: a wait tool's step made its waitpoint,
   * and the workflow waits on it (wait-steps.ts); one whose waitpoint was over at once (a `runs.wait` on
   * a run that had finished) is settled in the same activity instead.
   */
  status: 'SUCCEEDED' | 'FAILED' | 'CANCELLED' | 'NEEDS_APPROVAL' | 'BLOCKED' | 'WAITING';
  /** Issue 40 item 4: `NEEDS_APPROVAL` for a budget approval, not the rules' or the step's own. */
  reason?: 'budget';
  error?: RunError;
  /** After a `finish` step that finished the run: its status (SUCCEEDED, or what a cancel made it first). */
  run?: RunStatus;
  /** `WAITING`: the waitpoint as the step held it, the wait's first read (wait-steps.ts). */
  wait?: WaitState;
}

/**
 * What a step's activity does besides the step (issue 27), each in a transaction the step has anyway
 * instead of a local activity and a transaction of its own.
 */
export interface StepOptions {
  /** The run's first step: QUEUED → RUNNING first, as `beginRun` does. */
  begin?: boolean;
  /** Decide the approval rules first, as `decidePolicy` does; a step they stop is answered, not run. */
  decide?: boolean;
  /** A playbook's last step: its success finishes the run, as `finishRun` does. */
  finish?: boolean;
}

/** Which step of which run: every function of the runner takes one. */
interface StepRef {
  workspaceId: string;
  executionId: string;
  stepNo: number;
}

/**
 * What preparing a step found (one transaction): it is `done` already (an earlier attempt finished it,
 * or its run finished), `undecided` (the rules must decide first, outside a transaction, or they do not
 * allow it), `revoked` (who the run acts as may no longer act), or `ready`: RUNNING, to invoke.
 */
type Prepared =
  | { kind: 'done'; run: RunExecution; step: RunStep }
  // Its input takes values from the run (`$from`, step-input.ts): evaluated outside the transaction, then
  // written by the next prepare's.
  | { kind: 'unresolved'; pending: InputToResolve }
  | { kind: 'undecided'; decision: PolicyDecision | null }
  | { kind: 'revoked' }
  | { kind: 'over_budget' }
  | { kind: 'ready'; run: RunExecution; step: RunStep };

/**
 * A step of a run, executed: prepared (begun, decided when the rules can decide in the transaction,
 * identity re-checked, started), decided by the rules outside a transaction when an input filter must
 * run, then invoked through the capability registry and completed into the run's chain. Each part
 * is safe to repeat; `createRunSteps` (`steps.ts`) exposes them as the run workflow's activities.
 */
export function createStepRunner(deps: {
  uow: UnitOfWork;
  capabilities: Pick<CapabilityService, 'invoke' | 'find'>;
  /** Kicked after a step that finished its run, so its callbacks leave at once. */
  outbox?: Pick<OutboxRelay, 'kick'>;
  /** After a step that finished its run: wakes the runs waiting on it (`runs.wait`), then kicks the outbox. */
  wakeWaiters?: WaiterWaker;
  /** Evaluates the approval rules' input filters, under the trigger filters' budget (issue 32). */
  filters: Pick<FilterPool, 'evaluate'>;
}) {
  const { uow, capabilities } = deps;
  const resolveInput = createStepInputResolver(deps);
  /** Whether the step's tool (as the run keeps it) asks a person when no rule names it (a connector's write tool). */
  const byDefault = async (workspaceId: string, tool: string, run: RunExecution) =>
    (await capabilities.find(workspaceId, tool, pinsOf(run)))?.approvalByDefault === true;

  const completion = createStepCompletion(deps);
  const completeStep = completion.complete;
  /** A wait tool's step: held on its waitpoint, then settled (wait-steps.ts). */
  const waits = createWaitSteps({ uow, completion });

  /** What the attempt that finished the step recorded (another attempt won the guarded update). */
  const recordedOutcome = (workspaceId: string, executionId: string, stepNo: number): Promise<StepOutcome> =>
    uow({ workspaceId }, async (m) => {
      const step = (await stepRepo.findStep(m, executionId, stepNo))!;
      if (step.status === 'FAILED') return { status: 'FAILED', error: step.error ?? undefined };
      return { status: step.status === 'SUCCEEDED' ? 'SUCCEEDED' : 'CANCELLED' };
    });

  /**
   * What the workspace's approval rules decide for the step now, about to run (issue 32): recorded on
   * the step once, so a retry, a resumed run or a changed policy finds the same decision. A blocked
   * step is failed here with `blocked_by_policy`, nothing charged, and its failure answered.
   */
  async function decidePolicy(
    workspaceId: string,
    executionId: string,
    stepNo: number,
  ): Promise<{ action: RuleAction; version: number; error?: RunError }> {
    const seen = await uow({ workspaceId }, async (m) => {
      const run = await executionRepo.mustFindExecution(m, executionId);
      const step = await stepRepo.findStep(m, executionId, stepNo);
      if (!step) throw new NotFoundError({ error: 'step_not_found', step: stepNo });
      return { run, step, rules: step.policyDecision ? null : await readApprovalRules(m) };
    });
    const { run, step } = seen;
    let decision = step.policyDecision;
    if (!decision) {
      // The filters run in their worker pool, outside any transaction.
      const approvalByDefault = await byDefault(workspaceId, step.tool, run);
      const fresh = await decideStep(seen.rules!, { ...step, agent: run.agent, approvalByDefault }, deps.filters);
      decision = await uow({ workspaceId }, (m) => stepRepo.recordPolicyDecision(m, executionId, stepNo, fresh));
    }
    if (decision.action !== 'block') return { action: decision.action, version: decision.version };
    const failure = blockedByPolicy(stepNo, step.tool, decision);
    if (!isFinished(run.status)) {
      await completeStep(workspaceId, executionId, stepNo, {
        status: 'FAILED',
        output: null,
        error: failure,
        creditsCharged: 0,
      });
    }
    return { action: 'block', version: decision.version, error: failure };
  }

  /**
   * The step's first transaction: the run's begin (with `begin`), one read of the run, the step,
   * whether its identity may still act and (with `decide`) the workspace's rules; then the rules'
   * decision when no input filter has to run for it, and the step's start when they allow it. A step
   * whose `$from` values are not `resolved` yet answers what they read instead; the next prepare writes
   * their values first (`resolved.input`), in its own transaction rather than two more of the resolver's.
   */
  async function prepare(
    ref: StepRef,
    options: StepOptions,
    resolved?: { input?: Record<string, unknown> },
  ): Promise<Prepared> {
    const { workspaceId, executionId, stepNo } = ref;
    const begun: { gate?: GateRelease } = {};
    const prepared = await uow({ workspaceId }, async (m): Promise<Prepared> => {
      if (options.begin) begun.gate = await executionRepo.beginExecution(m, workspaceId, executionId);
      if (resolved?.input) await writeResolvedInput(m, executionId, stepNo, resolved.input);
      const read = await stepRepo.findRunAndStep(m, executionId, stepNo, {
        identityLive: RUN_IDENTITY_LIVE_SQL,
        ...(options.decide ? { rules: `(SELECT to_jsonb(a) FROM (${CURRENT_RULES_SQL}) a)` } : {}),
      });
      const { run, step } = read;
      if (!step) throw new NotFoundError({ error: 'step_not_found', step: stepNo });
      if (isFinished(run.status) || step.status === 'SUCCEEDED' || step.status === 'FAILED') {
        return { kind: 'done', run, step };
      }
      if (!resolved && step.status === 'PENDING') {
        const pending = await inputToResolve(m, run, stepNo);
        if (pending) return { kind: 'unresolved', pending };
      }
      // Issue 40 item 4: a step that would exceed the run's budget waits for a person's raise first.
      if (step.status === 'PENDING' && (await overrunOf(m, run, step))) return { kind: 'over_budget' };
      // The rules' decision, unless an input filter must run first (outside any transaction: null). One
      // taken here is recorded with the step's start when it allows the step, else on its own.
      let fresh: PolicyDecision | undefined;
      if (options.decide && step.status === 'PENDING') {
        const decision =
          step.policyDecision ??
          (await decideStepWithoutFilters(rulesFromRow(read.also.rules as Parameters<typeof rulesFromRow>[0]), {
            ...step,
            agent: run.agent,
            approvalByDefault: await byDefault(workspaceId, step.tool, run),
          }));
        if (decision && !step.policyDecision) fresh = decision;
        if (decision?.action !== 'allow') {
          const recorded = fresh ? await stepRepo.recordPolicyDecision(m, executionId, stepNo, fresh) : decision;
          return { kind: 'undecided', decision: recorded };
        }
      }
      // Before each step the run re-checks who it acts as: a revoked credential stops it here. A
      // retried attempt of a step already started goes on, as its effect may have committed.
      if (step.status === 'PENDING' && read.also.identityLive !== true) {
        if (fresh) await stepRepo.recordPolicyDecision(m, executionId, stepNo, fresh);
        return { kind: 'revoked' };
      }
      await stepRepo.markStepRunning(m, executionId, stepNo, fresh);
      return { kind: 'ready', run, step };
    });
    // The runs the gate let go as this one began (issue 43 item 2) start now.
    if (begun.gate?.released.length) deps.outbox?.kick(workspaceId);
    return prepared;
  }

  /**
   * A step the rules did not allow in `prepare`: a person must approve it, the rules block it (failed
   * here, as `decidePolicy` records it), or an input filter decides (`decidePolicy`, its filter run
   * outside any transaction). Null when they allow it after all.
   */
  async function decide(ref: StepRef, decision: PolicyDecision | null): Promise<StepOutcome | null> {
    if (decision?.action === 'require_approval') return { status: 'NEEDS_APPROVAL' };
    const decided = await decidePolicy(ref.workspaceId, ref.executionId, ref.stepNo);
    if (decided.action === 'block') return { status: 'BLOCKED', error: decided.error };
    if (decided.action === 'require_approval') return { status: 'NEEDS_APPROVAL' };
    return null;
  }

  /**
   * Runs a prepared step through the capability registry with idempotency key `<execution_id>:<step_no>`
   * (a write tool's retried call replays its stored answer). A domain refusal fails the step (its
   * charge refunded by the registry); anything transient is thrown for the activity to retry. A step
   * done already answers what was recorded; a revoked identity fails it without a call.
   */
  async function invoke(
    ref: StepRef,
    prepared: Exclude<Prepared, { kind: 'undecided' | 'unresolved' | 'over_budget' }>,
    finish?: boolean,
  ): Promise<StepOutcome> {
    const { workspaceId, executionId, stepNo } = ref;
    if (prepared.kind === 'revoked') return failUnrun(ref, credentialRevoked(stepNo));
    const { run, step } = prepared;
    // An earlier attempt finished the step: answer what it recorded, never run it twice.
    if (prepared.kind === 'done') {
      if (step.status === 'FAILED') return { status: 'FAILED', error: step.error ?? undefined };
      const status = isFinished(run.status) && step.status !== 'SUCCEEDED' ? 'CANCELLED' : 'SUCCEEDED';
      return { status };
    }
    const principal = thaw(run.principal, workspaceId);
    try {
      // One key for the step's side effect (a write tool replays) and its charge (a read tool's
      // retry finds the earlier charge), so a worker lost between the call and the step row costs nothing.
      const stepKey = runStepKey(executionId, stepNo);
      // An `execute_tool` span under the run's `invoke_agent` span (GenAI semantic conventions).
      const { envelope } = await withinAgentSpan(executionId, () =>
        toolSpan(
          step.tool,
          step.input,
          () =>
            capabilities.invoke(principal, step.tool, step.input, {
              idempotencyKey: stepKey,
              chargeKey: stepKey,
              correlationId: stepCorrelationId(executionId, stepNo),
              reclaimCorrelation: true,
              runId: executionId,
              pins: pinsOf(run),
            }),
          (answer) => ({ result: answer.envelope.result }),
        ),
      );
      // A wait tool's step is not over: the run waits on its waitpoint (unless that is over already).
      if (isWaitTool(step.tool)) return waits.hold(ref, envelope.result, finish);
      const recorded = await completeStep(
        workspaceId,
        executionId,
        stepNo,
        { status: 'SUCCEEDED', output: envelope.result, error: null, creditsCharged: envelope.credits_charged },
        finish,
      );
      return recorded ? { status: 'SUCCEEDED', ...recorded } : recordedOutcome(workspaceId, executionId, stepNo);
    } catch (error) {
      // A "not now" refusal is retried (the activity is); every other domain error fails the run.
      if (!(error instanceof DomainError) || isRetryableRefusal(error) || isKeyInUse(error)) throw error;
      const failure: RunError = { code: error.code, message: error.message, step: stepNo };
      const recorded = await completeStep(workspaceId, executionId, stepNo, {
        status: 'FAILED',
        output: null,
        error: failure,
        creditsCharged: 0,
      });
      return recorded ? { status: 'FAILED', error: failure } : recordedOutcome(workspaceId, executionId, stepNo);
    }
  }

  /**
   * One step, prepare → decide → invoke. `options` fold the run's begin, the rules' decision and the
   * run's finish into the step's own transactions (issue 27). A step the rules allow only after an
   * input filter ran (outside any transaction) is prepared once more, without deciding, then invoked.
   */
  async function runStep(
    workspaceId: string,
    executionId: string,
    stepNo: number,
    options: StepOptions = {},
  ): Promise<StepOutcome> {
    const ref = { workspaceId, executionId, stepNo };
    let prepared = await prepare(ref, options);
    if (prepared.kind === 'unresolved') {
      const evaluated = await evaluateInput(deps.filters, ref, prepared.pending);
      if ('failure' in evaluated) return failUnrun(ref, evaluated.failure);
      prepared = await prepare(ref, options, { input: evaluated.input });
    }
    if (prepared.kind === 'undecided') {
      const stopped = await decide(ref, prepared.decision);
      if (stopped) return stopped;
      prepared = await prepare(ref, { finish: options.finish }, {});
    }
    // Preparing without `decide`, its input resolved, never leaves a step undecided or unresolved.
    if (prepared.kind === 'undecided' || prepared.kind === 'unresolved') {
      throw new Error(`step ${stepNo} left ${prepared.kind}`);
    }
    if (prepared.kind === 'over_budget') return { status: 'NEEDS_APPROVAL', reason: 'budget' };
    return invoke(ref, prepared, options.finish);
  }

  /** Fails a step that did not run (nothing charged): answers its failure, or what another attempt recorded. */
  async function failUnrun(ref: StepRef, failure: RunError): Promise<StepOutcome> {
    const { workspaceId, executionId, stepNo } = ref;
    const outcome = { status: 'FAILED' as const, output: null, error: failure, creditsCharged: 0 };
    const recorded = await completeStep(workspaceId, executionId, stepNo, outcome);
    return recorded ? { status: 'FAILED', error: failure } : recordedOutcome(workspaceId, executionId, stepNo);
  }

  /**
   * The rules' decision for a step that waits for its approval first (the workflow's `decideStepPolicy`),
   * its `$from` values resolved before, so the rules and the approval see what will run; an input
   * that does not resolve fails the step and stops the run as a block does.
   */
  async function decideWithInput(workspaceId: string, executionId: string, stepNo: number) {
    const ref = { workspaceId, executionId, stepNo };
    const failure = await resolveInput(ref);
    if (!failure) return decidePolicy(workspaceId, executionId, stepNo);
    const outcome = await failUnrun(ref, failure);
    return { action: 'block' as const, version: 0, error: outcome.error ?? failure };
  }

  return { runStep, decidePolicy: decideWithInput, waitSteps: waits.steps };
}

export type StepRunner = ReturnType<typeof createStepRunner>;
