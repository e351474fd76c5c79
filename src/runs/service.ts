import { createHash } from 'node:crypto';
import type { z } from 'zod';
import type { AnyCapability } from '../capabilities/define';
import { requestHash } from '../capabilities/idempotency';
import type { CapabilityService } from '../capabilities/service';
import { scopeFor } from '../capabilities/service';
import { LIMITS } from '../limits';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { ScopeName } from '../platform/auth/scopes';
import { iso } from '../platform/dates';
import { decodeKeysetCursor, encodeKeysetCursor } from '../platform/db/keyset-cursor';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { ValidationIssue } from '../platform/errors';
import {
  BadRequestError,
  ConflictError,
  DomainError,
  ForbiddenError,
  NotFoundError,
  ValidationFailedError,
} from '../platform/errors';
import type { Logger } from '../platform/logger';
import type { OutboxRelay } from '../platform/outbox/relay';
import { enqueueOutboxEvent } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { AgentModel, AgentTool } from './agent-model';
import { approvalRefusal, memberCount, readApprovalPolicy, saveApprovalPolicy } from './approval-policy';
import { approvalEntry, resolvedCredential, stepEntry, verifyChain } from './audit';
import type { RunApproval, RunError, RunExecution, RunStatus, RunStep } from './entities';
import { FINISHED_STATUSES } from './entities';
import { credentialRevoked, runIdentityLive, storedExpiry } from './identity';
import { runStartInput } from './outbox-handler';
import * as repo from './repository';
import type {
  ApprovalPolicy,
  ApprovalRow,
  DispatchRunRequest,
  DispatchRunResponse,
  PlaybookStep,
  ResolveApprovalRequest,
  ResolveApprovalResponse,
  RunAudit,
  RunDetail,
  RunListQuery,
  RunSummary,
  RunTemplate,
} from './schemas';
import type { LlmMove } from './workflow';
import { RUN_DISPATCHED_EVENT, runChangedSignal, runWorkflow, runWorkflowId } from './workflow';

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

// Step failures worth retrying (the activity is retried); every other domain error fails the run.
const TRANSIENT_CODES = new Set(['unavailable', 'rate_limited', 'deadline_exceeded', 'timeout']);

/**
 * Another attempt of this very step holds its idempotency key (a slow attempt the server gave up
 * on, M-7): this one retries until the key is free, then replays what the other committed.
 */
const isKeyInUse = (error: DomainError) =>
  error.code === 'conflict' && (error.detail as { error?: unknown } | null)?.error === 'idempotency_key_in_use';

const approvalRow = (approval: RunApproval): ApprovalRow => ({
  approval_id: approval.id,
  execution_id: approval.executionId,
  status: approval.status,
  step: { step_no: approval.stepNo, tool: approval.tool, input: approval.input },
  notes: approval.notes,
  resolved_by: approval.resolvedBy,
  resolved_by_credential: resolvedCredential(approval),
  requested_at: approval.requestedAt.toISOString(),
  resolved_at: iso(approval.resolvedAt),
});

const stepRow = (step: RunStep) => ({
  step_id: step.id,
  step_no: step.stepNo,
  kind: step.kind,
  tool: step.tool,
  input: step.input,
  requires_approval: step.requiresApproval,
  status: step.status,
  output: step.output ?? null,
  error: step.error,
  credits_charged: step.creditsCharged,
  supersedes_step_id: step.supersedesStepId,
  superseded: step.superseded,
  started_at: iso(step.startedAt),
  finished_at: iso(step.finishedAt),
});

const summaryOf = (run: RunExecution): RunSummary => ({
  execution_id: run.id,
  run_id: run.runId,
  agent: run.agent,
  status: run.status,
  error: run.error,
  credits_charged: run.creditsCharged,
  created_at: run.createdAt.toISOString(),
  updated_at: run.updatedAt.toISOString(),
});

/** The 422 issues of one step: an unknown tool, or an input its tool's schema refuses. */
function stepIssues(tools: ReadonlyMap<string, AnyCapability>, step: PlaybookStep, at: number) {
  const loc = ['body', 'input', 'steps', at];
  const tool = tools.get(step.tool);
  if (!tool) return [{ loc: [...loc, 'tool'], msg: `Unknown tool ${step.tool}`, type: 'unknown_tool' }];
  const parsed = (tool.input as z.ZodType).safeParse(step.input);
  if (parsed.success) return [];
  return parsed.error.issues.map(
    (issue): ValidationIssue => ({
      loc: [...loc, 'input', ...issue.path.map((segment) => (typeof segment === 'symbol' ? String(segment) : segment))],
      msg: issue.message,
      type: issue.code,
    }),
  );
}

export interface StepOutcome {
  status: 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
  error?: RunError;
}

export interface ApprovalState {
  run: RunStatus;
  approval: RunApproval['status'];
}

/**
 * Agent runs (issue 12): dispatch writes the execution, its planned steps and a `run.dispatched`
 * outbox event in one transaction, so a committed run always gets its workflow `run-<id>`: the API
 * starts it under that derived id right after the commit, the outbox handler if the API did not
 * get to it, and a second start is refused. The workflow
 * drives the run through the activities' half of this service; the API's half reads, cancels and
 * resolves approvals with conditional updates, then signals the workflow.
 */
export function createRunService(deps: {
  uow: UnitOfWork;
  outbox: Pick<OutboxRelay, 'kick' | 'delivered'>;
  temporal: Pick<TemporalHandle, 'workflows'>;
  capabilities: Pick<CapabilityService, 'tools' | 'invoke' | 'describe'>;
  /** The llm agent's model: the local planner, or OpenAI tool calling when OPENAI_API_KEY is set. */
  agentModel: AgentModel;
  logger: Logger;
  /** Carried to the workflow in the dispatch event (RUN_APPROVAL_RECHECK_SECONDS). */
  approvalRecheckSeconds: number;
  /** Carried likewise (RUN_APPROVAL_RECHECKS_PER_RUN). */
  approvalRechecksPerRun: number;
}) {
  const { uow, outbox, temporal, capabilities, logger } = deps;
  const tools = new Map(capabilities.tools.map((tool) => [tool.name, tool]));
  const describedTools: AgentTool[] = capabilities.describe().map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.input_schema as Record<string, unknown>,
  }));

  async function mustFind(m: Parameters<typeof repo.findExecution>[0], id: string): Promise<RunExecution> {
    const run = await repo.findExecution(m, id);
    if (!run) throw new NotFoundError({ error: 'run_not_found', execution_id: id });
    return run;
  }

  /** Wakes the workflow; a lost signal is covered by its re-check timer, so failures are only logged. */
  async function wake(executionId: string, reason: 'approval_resolved' | 'cancelled') {
    try {
      await temporal.workflows.handle(runWorkflow, runWorkflowId(executionId)).signal(runChangedSignal, { reason });
    } catch (error) {
      logger.warn({ err: error, execution_id: executionId }, 'run signal failed; the re-check timer will notice');
    }
  }

  /** Appends a resolved (or cancelled) approval to its run's chain, as the row now reads. */
  async function auditApproval(m: Parameters<typeof repo.findExecution>[0], approvalId: string) {
    const approval = (await repo.findApprovalById(m, approvalId))!;
    await repo.appendAudit(m, {
      workspaceId: approval.workspaceId,
      executionId: approval.executionId,
      kind: 'APPROVAL',
      refId: approval.id,
      entry: approvalEntry(approval),
    });
  }

  /**
   * Finishes a step and appends it to the run's chain in one transaction; false (and no link) when
   * another attempt of the step finished it first.
   */
  const completeStep = (
    workspaceId: string,
    executionId: string,
    stepNo: number,
    outcome: Parameters<typeof repo.completeStepLocked>[3],
  ) =>
    uow({ workspaceId }, async (m) => {
      const step = await repo.completeStepLocked(m, executionId, stepNo, outcome);
      if (!step) return false;
      await repo.appendAuditLocked(m, {
        workspaceId,
        executionId,
        kind: 'TOOL',
        refId: step.id,
        entry: stepEntry(step),
      });
      await repo.settleFinishedCharges(m, executionId);
      return true;
    });

  /** What the attempt that finished the step recorded (another attempt won the guarded update). */
  const recordedOutcome = (workspaceId: string, executionId: string, stepNo: number): Promise<StepOutcome> =>
    uow({ workspaceId }, async (m) => {
      const step = (await repo.findStep(m, executionId, stepNo))!;
      if (step.status === 'FAILED') return { status: 'FAILED', error: step.error ?? undefined };
      return { status: step.status === 'SUCCEEDED' ? 'SUCCEEDED' : 'CANCELLED' };
    });

  const detail = async (m: Parameters<typeof repo.findExecution>[0], run: RunExecution): Promise<RunDetail> => ({
    ...summaryOf(run),
    input: run.input,
    output: run.output ?? null,
    steps: (await repo.stepsOf(m, run.id)).map(stepRow),
    approvals: (await repo.approvalsOf(m, run.id)).map(approvalRow),
  });

  /**
   * The checks of `POST /v1/runs` beyond its schema: known tools, inputs their schemas accept (422),
   * and scopes the dispatching credential holds (400). Webhook triggers run them on their template.
   */
  function validate(principal: Pick<Principal, 'scopes'>, body: RunTemplate): void {
    const planned = body.agent === 'playbook' ? body.input.steps : [];
    const issues = planned.flatMap((step, at) => stepIssues(tools, step, at));
    if (issues.length > 0) throw new ValidationFailedError(issues);
    const missing = planned
      .map((step) => scopeFor(tools.get(step.tool)!))
      .find((scope) => !principal.scopes.has(scope));
    if (missing) throw new BadRequestError(`The run's steps need scope ${missing}, which this credential lacks`);
  }

  /** The `run.dispatched` event's payload: what the workflow's start needs beyond the rows. */
  const dispatchedPayload = (id: string, body: RunTemplate): Record<string, unknown> => ({
    execution_id: id,
    agent: body.agent,
    step_count: body.agent === 'playbook' ? body.input.steps.length : 0,
    ...(body.agent === 'llm' ? { goal: body.input.goal.slice(0, 100) } : {}),
    approval_recheck_seconds: deps.approvalRecheckSeconds,
    approval_rechecks_per_run: deps.approvalRechecksPerRun,
  });

  /**
   * Starts a committed run's workflow at once (the relay would add a read, a round of its
   * per-workspace loop and a write before the same start), then marks its event delivered. A
   * failed start is left to the relay, kicked here; a crash before the start, to its sweep.
   */
  async function launch(workspaceId: string, executionId: string, body: RunTemplate): Promise<void> {
    try {
      await temporal.workflows.start(
        runWorkflow,
        runStartInput(workspaceId, executionId, dispatchedPayload(executionId, body)),
      );
    } catch (error) {
      logger.warn({ err: error, execution_id: executionId }, 'run start failed; the outbox relay will start it');
      outbox.kick(workspaceId);
      return;
    }
    outbox.delivered(workspaceId, RUN_DISPATCHED_EVENT, executionId).catch((error: unknown) => {
      logger.warn({ err: error, execution_id: executionId }, 'run event not marked delivered; the relay will');
    });
  }

  async function dispatchWithin(
    m: Parameters<typeof repo.findExecution>[0],
    principal: Principal,
    body: DispatchRunRequest,
  ): Promise<DispatchRunResponse> {
    const planned = body.agent === 'playbook' ? body.input.steps : [];
    const { idempotency_key: key = null, ...request } = body;
    const hash = requestHash(request);
    const answer = (run: RunExecution, duplicate: boolean): DispatchRunResponse => {
      if (duplicate && run.requestHash !== hash) {
        throw new ConflictError({
          error: 'idempotency_key_reused',
          message: 'This idempotency_key was used with another request body',
        });
      }
      return { execution_id: run.id, run_id: run.runId, status: run.status, was_duplicate: duplicate };
    };
    if (key) {
      const earlier = await repo.findExecutionByKey(m, key);
      if (earlier) return answer(earlier, true);
    }
    const id = await repo.insertExecution(m, {
      workspaceId: principal.workspaceId,
      userId: principal.userId,
      agent: body.agent,
      input: body.input,
      principal: {
        tenantId: principal.tenantId,
        scopes: [...principal.scopes],
        credential: {
          kind: principal.credential.kind,
          id: principal.credential.id,
          expires_at: storedExpiry(principal.credential.expiresAt),
        },
      },
      idempotencyKey: key,
      requestHash: hash,
    });
    // Taken by a concurrent dispatch, which has committed by now (ON CONFLICT waited for it).
    if (!id) return answer((await repo.findExecutionByKey(m, key!))!, true);
    await repo.insertSteps(
      m,
      principal.workspaceId,
      id,
      planned.map((step) => ({ tool: step.tool, input: step.input, requiresApproval: step.requires_approval })),
    );
    await enqueueOutboxEvent(m, {
      workspaceId: principal.workspaceId,
      eventType: RUN_DISPATCHED_EVENT,
      aggregateId: id,
      payload: dispatchedPayload(id, body),
    });
    return answer(await mustFind(m, id), false);
  }

  return {
    validate,

    /**
     * Dispatches inside the caller's transaction (a webhook delivery commits with its run); the
     * caller kicks the outbox after commit unless the answer was a duplicate.
     */
    dispatchWithin,

    /** Hands committed `run.dispatched` events of a workspace to the relay. */
    kick: (workspaceId: string) => outbox.kick(workspaceId),

    async dispatch(principal: Principal, body: DispatchRunRequest): Promise<DispatchRunResponse> {
      validate(principal, body);
      const response = await uow(scopeOf(principal), (m) => dispatchWithin(m, principal, body));
      if (!response.was_duplicate) await launch(principal.workspaceId, response.execution_id, body);
      return response;
    },

    get: (principal: Principal, executionId: string): Promise<RunDetail> =>
      uow(scopeOf(principal), async (m) => detail(m, await mustFind(m, executionId))),

    async list(principal: Principal, query: RunListQuery) {
      const after = query.cursor ? decodeKeysetCursor(query.cursor) : undefined;
      return uow(scopeOf(principal), async (m) => {
        const page = await repo.listExecutions(m, { ...query, after });
        const byId = new Map(
          (
            await repo.executionsByIds(
              m,
              page.map((row) => row.id),
            )
          ).map((run) => [run.id, run]),
        );
        const last = page.at(-1);
        return {
          runs: page.map((row) => summaryOf(byId.get(row.id)!)),
          next_cursor: last && page.length === query.limit ? encodeKeysetCursor(last.created_at_text, last.id) : null,
        };
      });
    },

    /** Idempotent: a cancelled run answers as it is; a run that finished otherwise is a 409. */
    async cancel(principal: Principal, executionId: string): Promise<RunSummary> {
      const run = await uow(scopeOf(principal), async (m) => {
        const found = await mustFind(m, executionId);
        if (found.status === 'CANCELLED') return found;
        const pending = (await repo.approvalsOf(m, executionId)).filter((approval) => approval.status === 'pending');
        if (!(await repo.cancelExecution(m, executionId))) {
          throw new ConflictError({ error: 'run_finished', status: found.status, message: 'The run has finished' });
        }
        for (const approval of pending) await auditApproval(m, approval.id);
        return mustFind(m, executionId);
      });
      await wake(executionId, 'cancelled');
      return summaryOf(run);
    },

    /** The run's hash chain, each link's entry recomputed from its row, and whether it still holds. */
    audit: (principal: Principal, executionId: string): Promise<RunAudit> =>
      uow(scopeOf(principal), async (m) => {
        await mustFind(m, executionId);
        const links = await repo.auditOf(m, executionId);
        const refsOf = (approvals: boolean) =>
          links.filter((link) => (link.kind === 'APPROVAL') === approvals).map((link) => link.refId);
        const entries = new Map<string, Record<string, unknown>>([
          ...(await repo.stepsByIds(m, refsOf(false))).map((step) => [step.id, stepEntry(step)] as const),
          ...(await repo.approvalsByIds(m, refsOf(true))).map((row) => [row.id, approvalEntry(row)] as const),
        ]);
        const views = links.map((link) => ({
          seq: link.seq,
          kind: link.kind,
          ref_id: link.refId,
          entry: entries.get(link.refId) ?? null,
          prev_hash: link.prevHash,
          hash: link.hash,
          created_at: link.createdAt.toISOString(),
        }));
        return { steps: views, ...verifyChain(views, (seq) => views[seq]?.entry ?? null) };
      }),

    approvalPolicy: (principal: Principal): Promise<ApprovalPolicy> => uow(scopeOf(principal), readApprovalPolicy),

    setApprovalPolicy: (principal: Principal, policy: ApprovalPolicy): Promise<ApprovalPolicy> =>
      uow(scopeOf(principal), async (m) => {
        await saveApprovalPolicy(m, principal.workspaceId, principal.userId, policy);
        return readApprovalPolicy(m);
      }),

    listApprovals: (principal: Principal, query: { status?: RunApproval['status']; limit: number }) =>
      uow(scopeOf(principal), async (m) => ({ approvals: (await repo.listApprovals(m, query)).map(approvalRow) })),

    getApproval: (principal: Principal, approvalId: string): Promise<ApprovalRow> =>
      uow(scopeOf(principal), async (m) => {
        const approval = await repo.findApprovalById(m, approvalId);
        if (!approval) throw new NotFoundError({ error: 'approval_not_found', approval_id: approvalId });
        return approvalRow(approval);
      }),

    /**
     * PENDING → decision exactly once (409 afterwards, or when the run has finished), then wakes the
     * run. Never by the credential that dispatched the run, nor by its user where the workspace's
     * approval policy says so (403); the resolving credential is recorded with the decision.
     */
    async resolve(
      principal: Principal,
      approvalId: string,
      body: ResolveApprovalRequest,
    ): Promise<ResolveApprovalResponse> {
      const executionId = await uow(scopeOf(principal), async (m) => {
        const approval = await repo.findApprovalById(m, approvalId);
        if (!approval) throw new NotFoundError({ error: 'approval_not_found', approval_id: approvalId });
        const run = await mustFind(m, approval.executionId);
        const refusal = await approvalRefusal({
          dispatcher: { userId: run.userId, credential: run.principal.credential },
          resolver: principal,
          policy: await readApprovalPolicy(m),
          members: () => memberCount(m),
        });
        if (refusal) throw new ForbiddenError(refusal);
        const resolved = await repo.resolveApproval(m, {
          approvalId,
          status: body.decision === 'APPROVED' ? 'approved' : 'rejected',
          userId: principal.userId,
          credential: principal.credential,
          notes: body.notes ?? null,
        });
        if (resolved) {
          await auditApproval(m, approvalId);
          return resolved.execution_id;
        }
        throw new ConflictError({
          error: approval.status === 'pending' ? 'run_finished' : 'approval_resolved',
          status: approval.status,
          message: approval.status === 'pending' ? 'The run has finished' : 'The approval was already resolved',
        });
      });
      await wake(executionId, 'approval_resolved');
      return { approval_id: approvalId, decision: body.decision, execution_id: executionId };
    },

    // The workflow's half: each function is one activity, safe to repeat.

    /** QUEUED → RUNNING; answers the plan (step numbers and approvals) and the run's status. */
    async beginRun(workspaceId: string, executionId: string) {
      return uow({ workspaceId }, async (m) => {
        const run = await mustFind(m, executionId);
        await repo.setStatus(m, executionId, 'RUNNING', 'QUEUED');
        const planned = await repo.stepsOf(m, executionId);
        const maxSteps = Number(run.input.max_steps ?? LIMITS.runs.llm.defaultMaxSteps);
        // An llm run resumed by the reconciler keeps its budget: each model call so far left one
        // tool step, except a chosen step not yet run, which the next call answers again.
        const tools = run.agent === 'llm' ? planned.filter((step) => step.kind === 'TOOL') : [];
        const unrun = ['PENDING', 'RUNNING'].includes(tools.at(-1)?.status ?? '') ? 1 : 0;
        return {
          status: (await mustFind(m, executionId)).status,
          maxSteps,
          llmCalls: tools.length - unrun,
          steps: planned.map((step) => ({
            stepNo: step.stepNo,
            tool: step.tool,
            requiresApproval: step.requiresApproval,
          })),
          userId: run.userId,
        };
      });
    },

    /** Creates the step's approval (PENDING) once and moves the run to AWAITING_APPROVAL. */
    async requestApproval(workspaceId: string, executionId: string, stepNo: number): Promise<ApprovalState> {
      return uow({ workspaceId }, async (m) => {
        const run = await mustFind(m, executionId);
        if (isFinished(run.status)) return { run: run.status, approval: 'cancelled' };
        const step = await repo.findStep(m, executionId, stepNo);
        const approval = await repo.requestApproval(m, step!);
        if (approval.status === 'pending') await repo.setStatus(m, executionId, 'AWAITING_APPROVAL');
        return { run: (await mustFind(m, executionId)).status, approval: approval.status };
      });
    },

    /** The run's and the approval's status, re-read after a signal or the re-check timer. */
    async approvalState(workspaceId: string, executionId: string, stepNo: number): Promise<ApprovalState> {
      return uow({ workspaceId }, async (m) => {
        const run = await mustFind(m, executionId);
        const approval = await repo.findApproval(m, executionId, stepNo);
        return { run: run.status, approval: approval?.status ?? 'pending' };
      });
    },

    /**
     * AWAITING_APPROVAL → RUNNING after an approval; false when the run finished meanwhile. A run
     * already RUNNING (this activity retried, or a resumed execution passing an approved step) is true.
     */
    resume: (workspaceId: string, executionId: string): Promise<boolean> =>
      uow({ workspaceId }, (m) => repo.resumeExecution(m, executionId)),

    /**
     * Runs one step through the capability registry with idempotency key `<execution_id>:<step_no>`
     * (a write tool's retried call replays its stored answer). A domain refusal fails the step (its
     * charge refunded by the registry); anything transient is thrown for the activity to retry.
     */
    async runStep(workspaceId: string, executionId: string, stepNo: number): Promise<StepOutcome> {
      const prepared = await uow({ workspaceId }, async (m) => {
        const run = await mustFind(m, executionId);
        const step = await repo.findStep(m, executionId, stepNo);
        if (!step) throw new NotFoundError({ error: 'step_not_found', step: stepNo });
        if (isFinished(run.status) || step.status === 'SUCCEEDED' || step.status === 'FAILED') {
          return { run, step, done: true };
        }
        // Before each step the run re-checks who it acts as: a revoked credential stops it here. A
        // retried attempt of a step already started goes on, as its effect may have committed.
        if (step.status === 'PENDING' && !(await runIdentityLive(m, run))) {
          return { run, step, done: false, revoked: true };
        }
        await repo.markStepRunning(m, executionId, stepNo);
        return { run, step, done: false };
      });
      const { run, step } = prepared;
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
      const principal: Principal = {
        userId: run.userId,
        workspaceId,
        tenantId: run.principal.tenantId,
        scopes: new Set(run.principal.scopes as ScopeName[]),
        credential: run.principal.credential as Principal['credential'],
      };
      try {
        // One key for the step's side effect (a write tool replays) and its charge (a read tool's
        // retry finds the earlier charge), so a worker lost between the call and the step row costs nothing.
        const stepKey = runStepKey(executionId, stepNo);
        const { envelope } = await capabilities.invoke(principal, step.tool, step.input, {
          idempotencyKey: stepKey,
          chargeKey: stepKey,
          correlationId: stepCorrelationId(executionId, stepNo),
          reclaimCorrelation: true,
        });
        const recorded = await completeStep(workspaceId, executionId, stepNo, {
          status: 'SUCCEEDED',
          output: envelope.result,
          error: null,
          creditsCharged: envelope.credits_charged,
        });
        return recorded ? { status: 'SUCCEEDED' } : recordedOutcome(workspaceId, executionId, stepNo);
      } catch (error) {
        if (!(error instanceof DomainError) || TRANSIENT_CODES.has(error.code) || isKeyInUse(error)) throw error;
        const failure: RunError = { code: error.code, message: error.message, step: stepNo };
        const recorded = await completeStep(workspaceId, executionId, stepNo, {
          status: 'FAILED',
          output: null,
          error: failure,
          creditsCharged: 0,
        });
        return recorded ? { status: 'FAILED', error: failure } : recordedOutcome(workspaceId, executionId, stepNo);
      }
    },

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
      const toolSteps = async (m: Parameters<typeof repo.findExecution>[0]) =>
        (await repo.stepsOf(m, executionId)).filter((step) => step.kind === 'TOOL');

      const seen = await uow({ workspaceId }, async (m) => {
        const run = await mustFind(m, executionId);
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
          await repo.appendAudit(m, { workspaceId, executionId, kind: 'TOOL', refId: step.id, entry: stepEntry(step) });
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
      return uow({ workspaceId }, async (m) => {
        const done = (await repo.stepsOf(m, executionId)).filter(
          (step) => step.kind === 'TOOL' && step.status === 'SUCCEEDED',
        );
        const last = outcome.answer !== undefined ? { answer: outcome.answer } : (done.at(-1)?.output ?? null);
        const output = outcome.status === 'SUCCEEDED' ? last : null;
        await repo.finishExecution(m, executionId, { ...outcome, output });
        return (await mustFind(m, executionId)).status;
      });
    },
  };
}

export type RunService = ReturnType<typeof createRunService>;
