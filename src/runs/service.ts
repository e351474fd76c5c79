import type { EntityManager } from 'typeorm';
import type { z } from 'zod';
import type { AnyCapability } from '../capabilities/define';
import { requestHash } from '../capabilities/idempotency';
import type { CapabilityService } from '../capabilities/service';
import { scopeFor } from '../capabilities/service';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { decodeKeysetCursor, encodeKeysetCursor } from '../platform/db/keyset-cursor';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { ValidationIssue } from '../platform/errors';
import {
  BadRequestError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  ValidationFailedError,
} from '../platform/errors';
import type { Logger } from '../platform/logger';
import type { OutboxRelay } from '../platform/outbox/relay';
import { enqueueEvent } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { LIMITS } from '../rules/limits';
import { approvalRefusal, memberCount, readApprovalPolicy, saveApprovalPolicy } from './approval-policy';
import { approvalEntry, stepEntry, verifyChain } from './audit';
import type { RunApproval, RunExecution } from './entities';
import type { RunDispatched } from './events';
import { runDispatched, runStartInput } from './events';
import { storedExpiry } from './identity';
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
import { approvalRow, stepRow, summaryOf } from './views';
import { runChangedSignal, runWorkflow, runWorkflowId } from './workflow';

/** Where a dispatch came from, beyond its body: the run schedule whose action dispatched it. */
export interface DispatchOrigin {
  scheduleId?: string;
}

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

/**
 * Agent runs (issue 12), the API's half: what routes, capabilities and webhook triggers call.
 * Dispatch writes the execution, its planned steps and a `run.dispatched` outbox event in one
 * transaction, so a committed run always gets its workflow `run-<id>`: the API starts it under that
 * derived id right after the commit, the outbox handler if the API did not get to it, and a second
 * start is refused. Reads, cancels and approval decisions are conditional updates, then a signal to
 * the workflow. The workflow drives the run through the step executor, `steps.ts`.
 */
export function createRunService(deps: {
  uow: UnitOfWork;
  outbox: Pick<OutboxRelay, 'kick' | 'delivered'>;
  temporal: Pick<TemporalHandle, 'workflows'>;
  capabilities: Pick<CapabilityService, 'tools'>;
  logger: Logger;
  /** Carried to the workflow in the dispatch event (RUN_APPROVAL_RECHECK_SECONDS). */
  approvalRecheckSeconds: number;
  /** Carried likewise (RUN_APPROVAL_RECHECKS_PER_RUN). */
  approvalRechecksPerRun: number;
}) {
  const { uow, outbox, temporal, capabilities, logger } = deps;
  const tools = new Map(capabilities.tools.map((tool) => [tool.name, tool]));

  /** Wakes the workflow; a lost signal is covered by its re-check timer, so failures are only logged. */
  async function wake(executionId: string, reason: 'approval_resolved' | 'cancelled') {
    try {
      await temporal.workflows.handle(runWorkflow, runWorkflowId(executionId)).signal(runChangedSignal, { reason });
    } catch (error) {
      logger.warn({ err: error, execution_id: executionId }, 'run signal failed; the re-check timer will notice');
    }
  }

  /** Appends a resolved (or cancelled) approval to its run's chain, as the row now reads. */
  async function auditApproval(m: EntityManager, approvalId: string) {
    const approval = (await repo.findApprovalById(m, approvalId))!;
    await repo.appendAudit(m, {
      workspaceId: approval.workspaceId,
      executionId: approval.executionId,
      kind: 'APPROVAL',
      refId: approval.id,
      entry: approvalEntry(approval),
    });
  }

  const detail = async (m: EntityManager, run: RunExecution): Promise<RunDetail> => ({
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
  const dispatchedPayload = (id: string, body: RunTemplate): RunDispatched => ({
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
   * failed start is left to the relay, kicked here; a crash before the start, to its sweep. It
   * starts from the payload the transaction wrote, as the relay would. The caller waits at most
   * `dispatchStartWaitMs`: while Temporal is unreachable its client retries for many seconds, and
   * the run is safe in the outbox anyway (a later second start is refused as a duplicate).
   */
  async function launch(workspaceId: string, payload: RunDispatched): Promise<void> {
    const executionId = payload.execution_id;
    const started = temporal.workflows.start(runWorkflow, runStartInput(workspaceId, payload)).then(
      () => {
        outbox.delivered(workspaceId, runDispatched, executionId).catch((error: unknown) => {
          logger.warn({ err: error, execution_id: executionId }, 'run event not marked delivered; the relay will');
        });
        return true;
      },
      (error: unknown) => {
        logger.warn({ err: error, execution_id: executionId }, 'run start failed; the outbox relay will start it');
        outbox.kick(workspaceId);
        return true;
      },
    );
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), LIMITS.runs.dispatchStartWaitMs);
    });
    const settled = await Promise.race([started, waited]);
    clearTimeout(timer);
    if (!settled) logger.warn({ execution_id: executionId }, 'run start still pending; answering, the outbox has it');
  }

  /** The dispatch's writes; with the event's payload when it wrote one (not for a duplicate). */
  async function write(
    m: EntityManager,
    principal: Principal,
    body: DispatchRunRequest,
    origin: DispatchOrigin = {},
  ): Promise<{ response: DispatchRunResponse; dispatched?: RunDispatched }> {
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
      if (earlier) return { response: answer(earlier, true) };
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
      scheduleId: origin.scheduleId ?? null,
    });
    // Taken by a concurrent dispatch, which has committed by now (ON CONFLICT waited for it).
    if (!id) return { response: answer((await repo.findExecutionByKey(m, key!))!, true) };
    await repo.insertSteps(
      m,
      principal.workspaceId,
      id,
      planned.map((step) => ({ tool: step.tool, input: step.input, requiresApproval: step.requires_approval })),
    );
    const dispatched = dispatchedPayload(id, body);
    await enqueueEvent(m, runDispatched, { workspaceId: principal.workspaceId, aggregateId: id, payload: dispatched });
    return { response: answer(await repo.mustFindExecution(m, id), false), dispatched };
  }

  return {
    validate,

    /**
     * Dispatches inside the caller's transaction (a webhook delivery commits with its run); the
     * caller kicks the outbox after commit unless the answer was a duplicate.
     */
    dispatchWithin: async (...args: Parameters<typeof write>) => (await write(...args)).response,

    /** Hands committed `run.dispatched` events of a workspace to the relay. */
    kick: (workspaceId: string) => outbox.kick(workspaceId),

    async dispatch(principal: Principal, body: DispatchRunRequest): Promise<DispatchRunResponse> {
      validate(principal, body);
      const { response, dispatched } = await uow(scopeOf(principal), (m) => write(m, principal, body));
      if (dispatched) await launch(principal.workspaceId, dispatched);
      return response;
    },

    get: (principal: Principal, executionId: string): Promise<RunDetail> =>
      uow(scopeOf(principal), async (m) => detail(m, await repo.mustFindExecution(m, executionId))),

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
        const found = await repo.mustFindExecution(m, executionId);
        if (found.status === 'CANCELLED') return found;
        const pending = (await repo.approvalsOf(m, executionId)).filter((approval) => approval.status === 'pending');
        if (!(await repo.cancelExecution(m, executionId))) {
          throw new ConflictError({ error: 'run_finished', status: found.status, message: 'The run has finished' });
        }
        for (const approval of pending) await auditApproval(m, approval.id);
        return repo.mustFindExecution(m, executionId);
      });
      await wake(executionId, 'cancelled');
      return summaryOf(run);
    },

    /** The run's hash chain, each link's entry recomputed from its row, and whether it still holds. */
    audit: (principal: Principal, executionId: string): Promise<RunAudit> =>
      uow(scopeOf(principal), async (m) => {
        await repo.mustFindExecution(m, executionId);
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
        const run = await repo.mustFindExecution(m, approval.executionId);
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
  };
}

export type RunService = ReturnType<typeof createRunService>;
