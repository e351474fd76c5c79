import { createHash } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import type { z } from 'zod';
import type { RunApproval } from '../approvals/entities';
import * as approvals from '../approvals/repository';
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
import { scopeFor } from '../capabilities/service';
import type { FilterPool } from '../filters/pool';
import { thaw } from '../platform/auth/stored-principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { DomainError, isRetryableRefusal, NotFoundError } from '../platform/errors';
import type { OutboxRelay } from '../platform/outbox/relay';
import { LIMITS } from '../rules/limits';
import type { AgentModel, AgentTool } from './agent-model';
import { expireStepApproval } from './approval-audit';
import type { StepEntryFields } from './audit';
import { stepEntry } from './audit';
import { callbackApprovalRequested } from './callbacks';
import type { RunError, RunStatus, RunStep } from './entities';
import { FINISHED_STATUSES } from './entities';
import { credentialRevoked, RUN_IDENTITY_LIVE_SQL, runIdentityLive } from './identity';
import * as repo from './repository';
import type { AuditRef, RunEventInput } from './run-events';
import { recordRunEvent, recordRunEventSetting } from './run-events';
import type { LlmMove } from './workflow';

/** A step's idempotency key, for its capability call and its charge. */
export const runStepKey = (executionId: string, stepNo: number) => `${executionId}:${stepNo}`;

// A fixed namespace for the steps' correlation ids (a random v4 uuid, chosen once).
const STEP_CORRELATION_NAMESPACE = 'f4a7c1e2-5b0d-4c39-9e61-2d8a7b3c5f10';

/**
 * A step's correlation id: a UUIDv5 of its key (RFC 9562 §5.5), so each step of a run has its own
 * (two `ontology.ask` steps both claim one, M-6) and a retried step finds its own again.
 */
export function stepCorrelationId(executionId: string, stepNo: number): string {
  const namespace = Buffer.from(STEP_CORRELATION_NAMESPACE.replaceAll('-', ''), 'hex');
  const hash = createHash('sha1').update(namespace).update(runStepKey(executionId, stepNo), 'utf8').digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const isFinished = (status: RunStatus) => FINISHED_STATUSES.includes(status);

/** A finished tool step's event (`step.completed` or `step.failed`), carrying its chain link. */
const stepEvent = (step: StepEntryFields, audit: AuditRef): RunEventInput =>
  step.status === 'FAILED'
    ? {
        type: 'step.failed',
        data: { step_no: step.stepNo, step_id: step.id, tool: step.tool, error: step.error },
        audit,
      }
    : {
        type: 'step.completed',
        data: {
          step_no: step.stepNo,
          step_id: step.id,
          tool: step.tool,
          output: step.output ?? null,
          credits_charged: step.creditsCharged,
        },
        audit,
      };

/**
 * Another attempt of this very step holds its idempotency key (a slow attempt the server gave up
 * on, M-7): this one retries until the key is free, then replays what the other committed.
 */
const isKeyInUse = (error: DomainError) =>
  error.code === 'conflict' && (error.detail as { error?: unknown } | null)?.error === 'idempotency_key_in_use';

export interface StepOutcome {
  /** `NEEDS_APPROVAL` and `BLOCKED` only when the step was asked to `decide`: it did not run. */
  status: 'SUCCEEDED' | 'FAILED' | 'CANCELLED' | 'NEEDS_APPROVAL' | 'BLOCKED';
  error?: RunError;
  /** After a `finish` step that finished the run: its status (SUCCEEDED, or what a cancel made it first). */
  run?: RunStatus;
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

export interface ApprovalState {
  run: RunStatus;
  approval: RunApproval['status'];
  /** The approval row's id, for the run's WeftWaitingFor; absent when there is none (and in older histories). */
  approvalId?: string;
  /**
   * Issue 32 part 3, only for a pending approval with a deadline: when it expires (ISO, the database's
   * clock), which the workflow's timer waits for; the row keeps it, so it survives continue-as-new.
   */
  expiresAt?: string;
  /** The deadline decided the approval (it was `rejected` or `approved` by no person). */
  expired?: boolean;
}

/** The fields of an approval's state beyond its status: its deadline while pending, or that it expired. */
const deadlineOf = (approval: RunApproval | null | undefined): Pick<ApprovalState, 'expiresAt' | 'expired'> => {
  if (!approval) return {};
  if (approval.status === 'pending' && approval.expiresAt) return { expiresAt: approval.expiresAt.toISOString() };
  return approval.expired ? { expired: true } : {};
};

/**
 * The step executor of agent runs: what the run workflow's activities call (`activities/runs.ts`),
 * each function one activity, safe to repeat. It begins the run, runs a step through the capability
 * registry (re-checking first who the run acts as), keeps the approval state, asks the llm agent's
 * model for its next move and finishes the run. The API's half is `service.ts`.
 */
export function createRunSteps(deps: {
  uow: UnitOfWork;
  capabilities: Pick<CapabilityService, 'tools' | 'invoke' | 'describe'>;
  /** The llm agent's model: the local planner, or OpenAI tool calling when OPENAI_API_KEY is set. */
  agentModel: AgentModel;
  /**
   * Kicked after a transaction that may have queued outbox events: callbacks (a finish, an approval
   * request) or the start of a waiting run that a finished run's concurrency slot went to.
   */
  outbox?: Pick<OutboxRelay, 'kick'>;
  /** Evaluates the approval rules' input filters, under the trigger filters' budget (issue 32). */
  filters: Pick<FilterPool, 'evaluate'>;
}) {
  const { uow, capabilities } = deps;
  /** A unit of work whose outbox events (run callbacks) leave right after it commits. */
  const afterCommit = async <T>(workspaceId: string, work: (m: EntityManager) => Promise<T>): Promise<T> => {
    const result = await uow({ workspaceId }, work);
    deps.outbox?.kick(workspaceId);
    return result;
  };
  const tools = new Map(capabilities.tools.map((tool) => [tool.name, tool]));
  const describedTools: AgentTool[] = capabilities.describe().map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.input_schema as Record<string, unknown>,
  }));

  /**
   * Finishes a step and appends it to the run's chain in one transaction; null (and no link) when
   * another attempt of the step finished it first. With `finish`, a succeeded step also finishes the
   * run, its output the step's (a playbook's last), and answers the run's status.
   */
  const completeStep = async (
    workspaceId: string,
    executionId: string,
    stepNo: number,
    outcome: Parameters<typeof repo.completeStepLocked>[3],
    finish = false,
  ): Promise<{ run?: RunStatus } | null> => {
    const completed = await uow({ workspaceId }, async (m) => {
      const step = await repo.completeStepLocked(m, executionId, stepNo, outcome);
      if (!step) return null;
      const audit = await repo.appendAuditLocked(m, {
        workspaceId,
        executionId,
        kind: 'TOOL',
        refId: step.id,
        entry: stepEntry(step),
      });
      // The step's event and, should a cancel have finished the run meanwhile, its charges: one statement.
      await recordRunEventSetting(m, executionId, repo.SETTLE_FINISHED_CHARGES, [stepEvent(step, audit)]);
      if (!finish || step.status !== 'SUCCEEDED') return {};
      const ended = await repo.finishExecution(m, executionId, {
        status: 'SUCCEEDED',
        output: step.output ?? null,
        error: null,
      });
      return { run: ended ? ('SUCCEEDED' as const) : (await repo.mustFindExecution(m, executionId)).status };
    });
    // A finished run's callbacks leave right after the commit.
    if (completed?.run) deps.outbox?.kick(workspaceId);
    return completed;
  };

  /** What the attempt that finished the step recorded (another attempt won the guarded update). */
  const recordedOutcome = (workspaceId: string, executionId: string, stepNo: number): Promise<StepOutcome> =>
    uow({ workspaceId }, async (m) => {
      const step = (await repo.findStep(m, executionId, stepNo))!;
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
      const run = await repo.mustFindExecution(m, executionId);
      const step = await repo.findStep(m, executionId, stepNo);
      if (!step) throw new NotFoundError({ error: 'step_not_found', step: stepNo });
      return { run, step, rules: step.policyDecision ? null : await readApprovalRules(m) };
    });
    const { run, step } = seen;
    let decision = step.policyDecision;
    if (!decision) {
      // The filters run in their worker pool, outside any transaction.
      const fresh = await decideStep(seen.rules!, { ...step, agent: run.agent }, deps.filters);
      decision = await uow({ workspaceId }, (m) => repo.recordPolicyDecision(m, executionId, stepNo, fresh));
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
   * Runs one step through the capability registry with idempotency key `<execution_id>:<step_no>`
   * (a write tool's retried call replays its stored answer). A domain refusal fails the step (its
   * charge refunded by the registry); anything transient is thrown for the activity to retry.
   * `options` fold the run's begin, the rules' decision and the run's finish into the step's own
   * transactions (issue 27).
   */
  async function runStep(
    workspaceId: string,
    executionId: string,
    stepNo: number,
    options: StepOptions = {},
  ): Promise<StepOutcome> {
    const prepared = await uow({ workspaceId }, async (m) => {
      if (options.begin) await repo.setStatus(m, executionId, 'RUNNING', 'QUEUED');
      // The run, the step, whether its identity may still act and (to decide) the workspace's rules: one statement.
      const read = await repo.findRunAndStep(m, executionId, stepNo, {
        identityLive: RUN_IDENTITY_LIVE_SQL,
        ...(options.decide ? { rules: `(SELECT to_jsonb(a) FROM (${CURRENT_RULES_SQL}) a)` } : {}),
      });
      const { run, step } = read;
      if (!step) throw new NotFoundError({ error: 'step_not_found', step: stepNo });
      if (isFinished(run.status) || step.status === 'SUCCEEDED' || step.status === 'FAILED') {
        return { run, step, done: true };
      }
      // The rules' decision, unless an input filter must run first (outside any transaction: null). One
      // taken here is recorded with the step's start when it allows the step, else on its own.
      let fresh: PolicyDecision | undefined;
      if (options.decide && step.status === 'PENDING') {
        const decision =
          step.policyDecision ??
          (await decideStepWithoutFilters(rulesFromRow(read.also.rules as Parameters<typeof rulesFromRow>[0]), {
            ...step,
            agent: run.agent,
          }));
        if (decision && !step.policyDecision) fresh = decision;
        if (decision?.action !== 'allow') {
          const recorded = fresh ? await repo.recordPolicyDecision(m, executionId, stepNo, fresh) : decision;
          return { run, step, done: false, decided: recorded };
        }
      }
      // Before each step the run re-checks who it acts as: a revoked credential stops it here. A
      // retried attempt of a step already started goes on, as its effect may have committed.
      if (step.status === 'PENDING' && read.also.identityLive !== true) {
        if (fresh) await repo.recordPolicyDecision(m, executionId, stepNo, fresh);
        return { run, step, done: false, revoked: true };
      }
      await repo.markStepRunning(m, executionId, stepNo, fresh);
      return { run, step, done: false };
    });
    const { run, step } = prepared;
    if ('decided' in prepared) {
      if (prepared.decided?.action === 'require_approval') return { status: 'NEEDS_APPROVAL' };
      // A block is recorded as decidePolicy records it; a filter's rule is decided by it.
      const decided = await decidePolicy(workspaceId, executionId, stepNo);
      if (decided.action === 'block') return { status: 'BLOCKED', error: decided.error };
      if (decided.action === 'require_approval') return { status: 'NEEDS_APPROVAL' };
      return runStep(workspaceId, executionId, stepNo, { finish: options.finish });
    }
    if ('revoked' in prepared) {
      const failure = credentialRevoked(stepNo);
      await completeStep(workspaceId, executionId, stepNo, {
        status: 'FAILED',
        output: null,
        error: failure,
        creditsCharged: 0,
      });
      return { status: 'FAILED', error: failure };
    }
    // An earlier attempt finished the step: answer what it recorded, never run it twice.
    if (prepared.done) {
      if (step.status === 'FAILED') return { status: 'FAILED', error: step.error ?? undefined };
      return { status: isFinished(run.status) && step.status !== 'SUCCEEDED' ? 'CANCELLED' : 'SUCCEEDED' };
    }
    const principal = thaw(run.principal, workspaceId);
    try {
      // One key for the step's side effect (a write tool replays) and its charge (a read tool's
      // retry finds the earlier charge), so a worker lost between the call and the step row costs nothing.
      const stepKey = runStepKey(executionId, stepNo);
      const { envelope } = await capabilities.invoke(principal, step.tool, step.input, {
        idempotencyKey: stepKey,
        chargeKey: stepKey,
        correlationId: stepCorrelationId(executionId, stepNo),
        reclaimCorrelation: true,
        runId: executionId,
      });
      const recorded = await completeStep(
        workspaceId,
        executionId,
        stepNo,
        { status: 'SUCCEEDED', output: envelope.result, error: null, creditsCharged: envelope.credits_charged },
        options.finish,
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

  return {
    /** QUEUED → RUNNING; answers the plan (step numbers and approvals) and the run's status. */
    async beginRun(workspaceId: string, executionId: string) {
      return uow({ workspaceId }, async (m) => {
        const run = await repo.mustFindExecution(m, executionId);
        await repo.setStatus(m, executionId, 'RUNNING', 'QUEUED');
        const planned = await repo.stepsOf(m, executionId);
        const maxSteps = Number(run.input.max_steps ?? LIMITS.runs.llm.defaultMaxSteps);
        // An llm run resumed by the reconciler keeps its budget: each model call so far left one
        // tool step, except a chosen step not yet run, which the next call answers again.
        const tools = run.agent === 'llm' ? planned.filter((step) => step.kind === 'TOOL') : [];
        const unrun = ['PENDING', 'RUNNING'].includes(tools.at(-1)?.status ?? '') ? 1 : 0;
        return {
          status: (await repo.mustFindExecution(m, executionId)).status,
          maxSteps,
          llmCalls: tools.length - unrun,
          // A rerun's reused steps are done already: the workflow neither waits for their approval nor runs them.
          steps: planned
            .filter((step) => !step.reusedFromStepId)
            .map((step) => ({
              stepNo: step.stepNo,
              tool: step.tool,
              requiresApproval: step.requiresApproval,
            })),
          userId: run.userId,
        };
      });
    },

    decidePolicy,

    /** Creates the step's approval (PENDING) once and moves the run to AWAITING_APPROVAL. */
    async requestApproval(workspaceId: string, executionId: string, stepNo: number): Promise<ApprovalState> {
      return afterCommit(workspaceId, async (m) => {
        const run = await repo.mustFindExecution(m, executionId);
        if (isFinished(run.status)) return { run: run.status, approval: 'cancelled' };
        const step = await repo.findStep(m, executionId, stepNo);
        const approval = await repo.requestApproval(m, step!);
        if (approval.status === 'pending') {
          await repo.setStatus(m, executionId, 'AWAITING_APPROVAL');
          await callbackApprovalRequested(m, approval);
        }
        const now = (await repo.mustFindExecution(m, executionId)).status;
        return { run: now, approval: approval.status, approvalId: approval.id, ...deadlineOf(approval) };
      });
    },

    /**
     * The deadline's outcome when it has passed (issue 32 part 3; `approvals/deadlines.ts`), then the
     * state as `approvalState` answers it: a deadline not yet due on the database's clock changes nothing.
     */
    async expireApproval(workspaceId: string, executionId: string, stepNo: number): Promise<ApprovalState> {
      return afterCommit(workspaceId, async (m) => {
        await expireStepApproval(m, executionId, stepNo);
        const run = await repo.mustFindExecution(m, executionId);
        const approval = await approvals.findApproval(m, executionId, stepNo);
        return {
          run: run.status,
          approval: approval?.status ?? 'pending',
          approvalId: approval?.id,
          ...deadlineOf(approval),
        };
      });
    },

    /** The run's and the approval's status, re-read after a signal or the re-check timer. */
    async approvalState(workspaceId: string, executionId: string, stepNo: number): Promise<ApprovalState> {
      return uow({ workspaceId }, async (m) => {
        const run = await repo.mustFindExecution(m, executionId);
        const approval = await approvals.findApproval(m, executionId, stepNo);
        return {
          run: run.status,
          approval: approval?.status ?? 'pending',
          approvalId: approval?.id,
          ...deadlineOf(approval),
        };
      });
    },

    /**
     * AWAITING_APPROVAL → RUNNING after an approval; false when the run finished meanwhile. A run
     * already RUNNING (this activity retried, or a resumed execution passing an approved step) is true.
     */
    resume: (workspaceId: string, executionId: string): Promise<boolean> =>
      uow({ workspaceId }, (m) => repo.resumeExecution(m, executionId)),

    runStep,

    /**
     * The llm agent's next move: the model sees the goal, the tools the run's credential may call,
     * and the tool steps so far. A chosen tool call becomes a PENDING step (approval by the run's
     * policy); an unknown tool or an input its schema refuses becomes a FAILED step whose error the
     * model sees next time; a final answer ends the run. The model is called outside any
     * transaction. A step planned but not yet run (a retried activity, or an earlier attempt that
     * planned while this one asked the model) is answered again, never planned twice.
     */
    async planNext(workspaceId: string, executionId: string): Promise<LlmMove> {
      const pendingMove = (steps: readonly RunStep[]): LlmMove | null => {
        const last = steps.at(-1);
        if (!last || (last.status !== 'PENDING' && last.status !== 'RUNNING')) return null;
        return { kind: 'step', stepNo: last.stepNo, tool: last.tool, requiresApproval: last.requiresApproval };
      };
      const toolSteps = async (m: EntityManager) =>
        (await repo.stepsOf(m, executionId)).filter((step) => step.kind === 'TOOL');

      const seen = await afterCommit(workspaceId, async (m) => {
        const run = await repo.mustFindExecution(m, executionId);
        const history = await toolSteps(m);
        const move = pendingMove(history);
        // Before each model turn the run re-checks who it acts as; a revoked credential ends it here.
        if (!move && !isFinished(run.status) && !(await runIdentityLive(m, run))) {
          await repo.finishExecution(m, executionId, {
            status: 'FAILED',
            output: null,
            error: credentialRevoked(null),
          });
          return { run, history, move, ended: true };
        }
        return { run, history, move, ended: isFinished(run.status) };
      });
      if (seen.move) return seen.move;
      // A finished run asks the model nothing; the workflow's finishing write after a final move
      // leaves a finished run as it is and answers its status.
      if (seen.ended) return { kind: 'final', answer: '' };
      const { run, history } = seen;
      // A tool the run's credential may not call is not offered, and a call of it is an unknown tool.
      const callable = (name: string) => {
        const tool = tools.get(name);
        return tool && run.principal.scopes.includes(scopeFor(tool)) ? tool : undefined;
      };
      const move = await deps.agentModel.next({
        goal: String(run.input.goal ?? ''),
        tools: describedTools.filter((tool) => callable(tool.name)),
        history,
      });
      if (move.kind === 'final') return move;

      const tool = callable(move.tool);
      const parsed = tool && !move.refusal ? (tool.input as z.ZodType).safeParse(move.input) : null;
      const refusal = !tool
        ? `Unknown tool ${move.tool}`
        : move.refusal
          ? `${move.tool}: ${move.refusal}`
          : parsed && !parsed.success
            ? `Input refused by ${move.tool}: ${parsed.error.message}`
            : null;
      const policy = run.input.approval ?? 'writes';
      return uow({ workspaceId }, async (m) => {
        await repo.lockExecution(m, executionId);
        const now = await toolSteps(m);
        if (now.length !== history.length) return pendingMove(now) ?? { kind: 'invalid' };
        const step = await repo.insertChosenStep(m, {
          workspaceId,
          executionId,
          tool: move.tool,
          input: move.input,
          requiresApproval: policy === 'all' || (policy === 'writes' && tool?.access === 'write'),
          error: refusal ? { code: 'invalid_tool_call', message: refusal, step: null } : null,
        });
        if (refusal) {
          const link = { workspaceId, executionId, kind: 'TOOL' as const, refId: step.id, entry: stepEntry(step) };
          await recordRunEvent(m, executionId, stepEvent(step, await repo.appendAudit(m, link)));
          return { kind: 'invalid' };
        }
        return { kind: 'step', stepNo: step.stepNo, tool: step.tool, requiresApproval: step.requiresApproval };
      });
    },

    /**
     * Ends the run (unless a cancel ended it first); its output is the llm agent's answer, or the
     * last tool step's result. Answers the final status.
     */
    async finishRun(
      workspaceId: string,
      executionId: string,
      outcome: { status: 'SUCCEEDED' | 'FAILED'; error: RunError | null; answer?: string },
    ): Promise<RunStatus> {
      return afterCommit(workspaceId, async (m) => {
        const done = (await repo.stepsOf(m, executionId)).filter(
          (step) => step.kind === 'TOOL' && step.status === 'SUCCEEDED',
        );
        const last = outcome.answer !== undefined ? { answer: outcome.answer } : (done.at(-1)?.output ?? null);
        const output = outcome.status === 'SUCCEEDED' ? last : null;
        await repo.finishExecution(m, executionId, { ...outcome, output });
        return (await repo.mustFindExecution(m, executionId)).status;
      });
    },
  };
}

export type RunSteps = ReturnType<typeof createRunSteps>;
