import type { EntityManager } from 'typeorm';
import * as approvals from '../approvals/repository';
import { approvalRows } from '../approvals/views';
import type { AnyCapability } from '../capabilities/define';
import { requestHash } from '../capabilities/idempotency';
import type { CapabilityService } from '../capabilities/service';
import { scopesFor } from '../capabilities/service';
import type { FilterPool } from '../filters/pool';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { freeze } from '../platform/auth/stored-principal';
import { decodeKeysetCursor, encodeKeysetCursor } from '../platform/db/keyset-cursor';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { settledWithin } from '../platform/deadline';
import { BadRequestError, ConflictError, ValidationFailedError } from '../platform/errors';
import type { Logger } from '../platform/logger';
import type { OutboxRelay } from '../platform/outbox/relay';
import { enqueueEvent } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { LIMITS } from '../rules/limits';
import type { RunCallbackService } from '../run-callbacks/service';
import { chainOf, lineageOf } from './audit-chain';
import { inheritedBudget, recordBudget, spentBy } from './budget';
import { budgetApprovalRow, budgetApprovalsOf } from './budget-approvals';
import { cancelTree, cancelWithin } from './cancel';
import type { RunLineage } from './children';
import { cancelDescendants } from './children';
import { admit } from './concurrency';
import { lockConcurrencyKey, recordControl } from './concurrency-repository';
import type { RerunRequest } from './control-schemas';
import type { RunExecution } from './entities';
import type { RunEstimate } from './estimate';
import { estimateAgainstBalance, estimateRun, refuseUnaffordable } from './estimate';
import { recordRunEvent } from './event-repository';
import type { RunDispatched } from './events';
import { dispatchedEvent, runDispatched, runStartInput } from './events';
import * as executionRepo from './execution-repository';
import { backlogWeight } from './fair-share';
import { admitDispatch, collapseDispatch, recordDispatchFlow } from './flow';
import { flowConflict, priorityOf } from './flow-schemas';
import type { GateRelease } from './priority-gate';
import { holdAtGate } from './priority-gate';
import { holdDispatch } from './priority-gate-repository';
import type { RerunPlan } from './rerun';
import { planRerun, recordRerun } from './rerun';
import type {
  DispatchRunRequest,
  DispatchRunResponse,
  PlaybookStep,
  RunAudit,
  RunDetail,
  RunListQuery,
  RunSummary,
  RunTemplate,
} from './schemas';
import { stepIssues } from './step-issues';
import * as stepRepo from './step-repository';
import { queuedReason, stepRow, summaryOf } from './views';
import { createRunWaker } from './wake';
import { runWorkflow } from './workflow';

/** After a dispatch's commit, the outbox has events to deliver (a flow's timer), or the runs its gate let go. */
type Kick = boolean | GateRelease;

/** Where a dispatch came from, beyond its body: the run schedule whose action dispatched it, or the run it re-runs. */
export interface DispatchOrigin {
  scheduleId?: string;
  /** A rerun's plan (`rerun.ts`): the earlier run and the steps it reuses. */
  rerun?: RerunPlan & { earlierId: string };
  /** The run whose step dispatched it (`children.ts`), its tree's root and its depth. */
  lineage?: RunLineage;
  /** Refused with 402 unless the balance pays it (issue 43 item 4); a repeat of an earlier dispatch is not. */
  estimate?: RunEstimate;
}

/**
 * Agent runs (issue 12), the API's half: what routes, capabilities and webhook triggers call.
 * Dispatch writes the execution, its planned steps and a `run.dispatched` outbox event in one
 * transaction, so a committed run always gets its workflow `run-<id>`: the API starts it under that
 * derived id right after the commit, the outbox handler if the API did not get to it, and a second
 * start is refused. Reads and cancels are conditional updates, then a signal to the workflow (approval
 * decisions are src/approvals', with the step as their subject, `approval-subject.ts`). The workflow
 * drives the run through the step executor, `steps.ts`.
 */
export function createRunService(deps: {
  uow: UnitOfWork;
  outbox: Pick<OutboxRelay, 'kick' | 'delivered'>;
  temporal: Pick<TemporalHandle, 'workflows'>;
  capabilities: Pick<CapabilityService, 'tools' | 'toolsFor'>;
  logger: Logger;
  /** Carried to the workflow in the dispatch event (RUN_APPROVAL_RECHECK_SECONDS). */
  approvalRecheckSeconds: number;
  /** Carried likewise (RUN_APPROVAL_RECHECKS_PER_RUN). */
  approvalRechecksPerRun: number;
  /** A dispatch's own callback (issue 26 part 2), created in the dispatch's transaction. */
  callbacks?: Pick<RunCallbackService, 'attachToDispatch' | 'checkDispatchCallback'>;
  /** Evaluates flow keys' expressions (issue 43 item 2) under the filters' budget. */
  filters?: Pick<FilterPool, 'evaluate'>;
}) {
  const { uow, outbox, temporal, capabilities, logger } = deps;
  const tools = new Map(capabilities.tools.map((tool) => [tool.name, tool]));

  const wake = createRunWaker({ temporal, logger });

  const detail = async (m: EntityManager, run: RunExecution): Promise<RunDetail> => ({
    ...summaryOf(run),
    input: run.input,
    output: run.output ?? null,
    steps: (await stepRepo.stepsOf(m, run.id)).map(stepRow),
    approvals: [
      ...(await approvalRows(m, await approvals.approvalsOf(m, run.id))),
      ...(await budgetApprovalsOf(m, run.id)).map(budgetApprovalRow),
    ],
    budget: run.budget ?? null,
    spent: await spentBy(m, run.id),
  });

  /**
   * The checks of `POST /v1/runs` beyond its schema: known tools, inputs their schemas accept (422),
   * and scopes the dispatching credential holds (400). Webhook triggers run them on their template.
   */
  function validateWith(
    principal: Pick<Principal, 'scopes'>,
    body: RunTemplate,
    known: ReadonlyMap<string, AnyCapability>,
  ): void {
    const planned = body.agent === 'playbook' ? body.input.steps : [];
    const issues = planned.flatMap((step, at) => stepIssues(known, step, at));
    const conflict = flowConflict(body);
    if (conflict) issues.push({ loc: ['body', 'flow'], msg: conflict, type: 'value_error' });
    if (issues.length > 0) throw new ValidationFailedError(issues);
    checkScopes(principal, planned, known);
  }

  /** `validateWith` against the registry's tools and the workspace's own (its connectors'). */
  async function validate(
    principal: Pick<Principal, 'scopes' | 'workspaceId'>,
    body: RunTemplate,
  ): Promise<ReadonlyMap<string, AnyCapability>> {
    const known = await toolsKnownTo(principal.workspaceId, body);
    validateWith(principal, body, known);
    return known;
  }

  /** The registry's tools, and the workspace's own (its connectors') when a step names one of those. */
  async function toolsKnownTo(workspaceId: string, body: RunTemplate): Promise<ReadonlyMap<string, AnyCapability>> {
    const planned = body.agent === 'playbook' ? body.input.steps : [];
    if (planned.every((step) => tools.has(step.tool))) return tools;
    return new Map((await capabilities.toolsFor(workspaceId)).map((tool) => [tool.name, tool]));
  }

  /** 400 when the credential lacks a scope one of the steps' tools needs. */
  function checkScopes(
    principal: Pick<Principal, 'scopes'>,
    planned: readonly PlaybookStep[],
    known: ReadonlyMap<string, AnyCapability> = tools,
  ): void {
    const missing = planned
      .flatMap((step) => scopesFor(known.get(step.tool)!))
      .find((scope) => !principal.scopes.has(scope));
    if (missing) throw new BadRequestError(`The run's steps need scope ${missing}, which this credential lacks`);
  }

  const dispatchedPayload = (id: string, body: RunTemplate, rerun: boolean) =>
    dispatchedEvent(id, body, rerun, { seconds: deps.approvalRecheckSeconds, perRun: deps.approvalRechecksPerRun });

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
    const settled = await settledWithin(started, LIMITS.runs.dispatchStartWaitMs);
    if (!settled) logger.warn({ execution_id: executionId }, 'run start still pending; answering, the outbox has it');
  }

  /**
   * The dispatch's writes; with the event's payload when it wrote one (not for a duplicate, nor for
   * a run that waits for a concurrency slot), and the runs a `cancel_previous` key cancelled.
   */
  async function write(
    m: EntityManager,
    principal: Principal,
    body: DispatchRunRequest,
    origin: DispatchOrigin = {},
  ): Promise<{ response: DispatchRunResponse; dispatched?: RunDispatched; cancelled?: string[]; kick?: Kick }> {
    const { rerun } = origin;
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
      return {
        execution_id: run.id,
        run_id: run.runId,
        status: run.status,
        was_duplicate: duplicate,
        queued_reason: queuedReason(run),
      };
    };
    const findEarlier = async () => {
      const earlier = key ? await executionRepo.findExecutionByKey(m, key) : null;
      return earlier ? { response: answer(earlier, true) } : undefined;
    };
    const duplicate = await findEarlier();
    if (duplicate) return duplicate;
    if (body.concurrency) {
      // Under the key's lock a concurrent dispatch with the same idempotency key has committed, so a
      // repeat is answered as one before the limit is counted.
      await lockConcurrencyKey(m, principal.workspaceId, body.concurrency.key);
      const repeat = await findEarlier();
      if (repeat) return repeat;
    }
    if (origin.estimate) await refuseUnaffordable(m, principal.tenantId, origin.estimate);
    // Issue 43 item 2: refused over a rate limit, collapsed into a waiting debounced run, or held.
    const flowed = await admitDispatch(m, principal.workspaceId, body.flow, body.input, deps.filters);
    const flow = flowed?.admission;
    if (flow?.kind === 'collapse') {
      const payload = dispatchedPayload(flow.into.id, body, false);
      return { response: await collapseDispatch(m, principal.workspaceId, body, payload, flow) };
    }
    const admission = body.concurrency ? await admit(m, principal.workspaceId, body.concurrency) : undefined;
    const inserted = await executionRepo.insertExecution(m, {
      workspaceId: principal.workspaceId,
      userId: principal.userId,
      agent: body.agent,
      input: body.input,
      principal: freeze(principal),
      idempotencyKey: key,
      requestHash: hash,
      scheduleId: origin.scheduleId ?? null,
      lineage: origin.lineage,
      priority: priorityOf(body.flow),
    });
    // Taken by a concurrent dispatch, which has committed by now (ON CONFLICT waited for it).
    if (!inserted) return { response: answer((await executionRepo.findExecutionByKey(m, key!))!, true) };
    const { id } = inserted;
    await stepRepo.insertSteps(
      m,
      principal.workspaceId,
      id,
      planned.map((step) => ({ tool: step.tool, input: step.input, requiresApproval: step.requires_approval })),
    );
    const cancelled: string[] = [];
    for (const older of admission?.kind === 'start' ? (admission.cancel ?? []) : []) {
      await cancelWithin(m, older, false);
      cancelled.push(older, ...(await cancelDescendants(m, older, (tx, child) => cancelWithin(tx, child))));
    }
    const weight = backlogWeight(inserted.waiting);
    const dispatched = { ...dispatchedPayload(id, body, rerun !== undefined), ...(weight ? { weight } : {}) };
    const flowHeld = flow?.kind === 'hold';
    const keyHeld = admission?.kind === 'hold';
    // Issue 43 item 2: a run no other hold keeps back may wait its turn at the priority gate (priority-gate.ts).
    const gate = keyHeld || flowHeld ? undefined : holdAtGate(m, principal.workspaceId, inserted.gate);
    const held = keyHeld || flowHeld || gate !== undefined;
    const flowReason = flowHeld && flow.hold === 'throttle' ? 'throttled' : 'debounced';
    const reason = flowHeld ? flowReason : keyHeld ? 'concurrency_limit' : 'priority';
    // A held run says why it waits; it starts when a slot frees (concurrency.ts), its time comes (flow.ts) or
    // its turn at the gate.
    await recordRunEvent(m, id, {
      type: 'run.status',
      data: held ? { status: 'QUEUED', queued_reason: reason } : { status: 'QUEUED' },
    });
    if (flowed) await recordDispatchFlow(m, principal.workspaceId, id, flowed, flowHeld ? dispatched : undefined);
    if (body.tags?.length || body.concurrency) {
      await recordControl(m, id, {
        tags: [...new Set(body.tags ?? [])],
        concurrency: body.concurrency,
        held: held ? dispatched : undefined,
      });
    }
    if (gate) await holdDispatch(m, id, dispatched);
    // A child's budget is what is left of its parent's (its spend counts against the parent's too).
    const budget = origin.lineage ? await inheritedBudget(m, origin.lineage.parentId, body.budget) : body.budget;
    await recordBudget(m, id, budget);
    if (rerun) await recordRerun(m, { workspaceId: principal.workspaceId, executionId: id }, rerun);
    const callback =
      body.callback && deps.callbacks
        ? await deps.callbacks.attachToDispatch(m, principal, id, body.callback)
        : undefined;
    // A new run is QUEUED, held or not: answered from what this transaction wrote, without reading it back.
    const row: DispatchRunResponse = {
      execution_id: id,
      run_id: inserted.runId,
      status: 'QUEUED',
      was_duplicate: false,
      queued_reason: held ? reason : null,
      ...(body.flow?.debounce ? { debounced: false } : {}),
    };
    const response = callback ? { ...row, callback } : row;
    // A held run's start is enqueued by the gate, once its slot frees (concurrency.ts) or its time comes (flow.ts).
    if (held) return { response, cancelled, kick: flowHeld || gate };
    await enqueueEvent(m, runDispatched, { workspaceId: principal.workspaceId, aggregateId: id, payload: dispatched });
    return { response, dispatched, cancelled };
  }

  /** After a cancel's commit: wake the cancelled runs; their callbacks, and the starts their slots went to, leave. */
  async function afterCancel(workspaceId: string, woken: readonly string[]): Promise<void> {
    await Promise.all(woken.map((id) => wake(id, 'cancelled')));
    outbox.kick(workspaceId);
  }

  /** A dispatch checked again: its tools and scopes, and its price against the balance (402). */
  const checkedWrite = async (m: EntityManager, principal: Principal, body: DispatchRunRequest, origin = {}) =>
    write(m, principal, body, { ...origin, estimate: estimateRun(body, await validate(principal, body)) });

  /** After a dispatch's commit: start its workflow, wake the runs it cancelled. */
  async function afterDispatch(
    workspaceId: string,
    written: { dispatched?: RunDispatched; cancelled?: string[]; kick?: Kick },
  ): Promise<void> {
    await Promise.all((written.cancelled ?? []).map((older) => wake(older, 'cancelled')));
    const { kick } = written;
    if (written.cancelled?.length || kick === true || (kick && kick.released.length > 0)) outbox.kick(workspaceId);
    if (written.dispatched) await launch(workspaceId, written.dispatched);
  }

  return {
    validate,

    /**
     * `checkedWrite` in the caller's transaction (a webhook delivery commits with its run, a schedule's fire
     * with its record); the caller kicks the outbox after commit unless the answer was a duplicate.
     */
    dispatchWithin: async (...args: Parameters<typeof checkedWrite>) => (await checkedWrite(...args)).response,

    /** A dispatch checked as `dispatch`'s, in the caller's transaction (a tool's); `after` runs once it commits. */
    async dispatchIn(...args: Parameters<typeof checkedWrite>) {
      const written = await checkedWrite(...args);
      return { response: written.response, after: () => afterDispatch(args[1].workspaceId, written) };
    },

    /** A cancel (with the run's descendants) in the caller's transaction (a tool's); `after` once it commits. */
    async cancelIn(m: EntityManager, workspaceId: string, executionId: string) {
      const { run, woken } = await cancelTree(m, executionId);
      return { summary: summaryOf(run), after: () => afterCancel(workspaceId, woken) };
    },

    /** `POST /v1/runs?dry_run=true`: the dispatch's checks and its estimate against the balance; nothing written. */
    async estimate(principal: Principal, body: DispatchRunRequest) {
      const estimate = estimateRun(body, await validate(principal, body));
      if (body.callback) deps.callbacks?.checkDispatchCallback(body.callback);
      return uow(scopeOf(principal), (m) => estimateAgainstBalance(m, principal.tenantId, estimate));
    },

    /** Hands committed `run.dispatched` events of a workspace to the relay. */
    kick: (workspaceId: string) => outbox.kick(workspaceId),

    async dispatch(principal: Principal, body: DispatchRunRequest): Promise<DispatchRunResponse> {
      const estimate = estimateRun(body, await validate(principal, body));
      if (body.callback) deps.callbacks?.checkDispatchCallback(body.callback);
      const written = await uow(scopeOf(principal), (m) => write(m, principal, body, { estimate }));
      await afterDispatch(principal.workspaceId, written);
      return written.response;
    },

    /**
     * A new run repeating a finished one from `from_step` (`rerun.ts`): a playbook's steps it re-executes
     * are checked like a dispatch's (their overridden inputs under `input_overrides`; an llm run's model
     * chooses its own again), then it is dispatched as the caller, with the earlier run's tags and
     * concurrency key.
     */
    async rerun(principal: Principal, executionId: string, body: RerunRequest): Promise<DispatchRunResponse> {
      const written = await uow(scopeOf(principal), async (m) => {
        const earlier = await executionRepo.mustFindExecution(m, executionId);
        const plan = await planRerun(m, earlier, body);
        const planned = plan.template.agent === 'playbook' ? plan.template.input.steps : [];
        const executed = planned.slice(plan.fromStep);
        const known = await toolsKnownTo(principal.workspaceId, plan.template);
        const issues = executed.flatMap((step, at) => {
          const stepNo = plan.fromStep + at;
          const overridden = body.input_overrides?.[String(stepNo)] !== undefined;
          return stepIssues(known, step, stepNo, overridden ? ['body', 'input_overrides', String(stepNo)] : undefined);
        });
        if (issues.length > 0) throw new ValidationFailedError(issues);
        checkScopes(principal, executed, known);
        return write(m, principal, plan.template, { rerun: { ...plan, earlierId: earlier.id } });
      });
      await afterDispatch(principal.workspaceId, written);
      return written.response;
    },

    // One snapshot: the run, its steps and its approvals as of one moment (never RUNNING beside the
    // approval it waits on).
    get: (principal: Principal, executionId: string): Promise<RunDetail> =>
      uow({ ...scopeOf(principal), snapshot: true }, async (m) =>
        detail(m, await executionRepo.mustFindExecution(m, executionId)),
      ),

    /** The run without its steps and approvals (an MCP task's poll): one row. */
    summary: (principal: Principal, executionId: string): Promise<RunSummary> =>
      uow(scopeOf(principal), async (m) => summaryOf(await executionRepo.mustFindExecution(m, executionId))),

    async list(principal: Principal, query: RunListQuery) {
      const after = query.cursor ? decodeKeysetCursor(query.cursor) : undefined;
      return uow(scopeOf(principal), async (m) => {
        const page = await executionRepo.listExecutions(m, { ...query, after });
        const ids = page.map((row) => row.id);
        const byId = new Map((await executionRepo.executionsByIds(m, ids)).map((run) => [run.id, run]));
        const last = page.at(-1);
        return {
          runs: page.map((row) => summaryOf(byId.get(row.id)!)),
          next_cursor: last && page.length === query.limit ? encodeKeysetCursor(last.created_at_text, last.id) : null,
        };
      });
    },

    /** Idempotent: a cancelled run answers as it is, one that finished otherwise is a 409; its children go too. */
    async cancel(principal: Principal, executionId: string): Promise<RunSummary> {
      const { run, woken } = await uow(scopeOf(principal), (m) => cancelTree(m, executionId));
      await afterCancel(principal.workspaceId, woken);
      return summaryOf(run);
    },

    /** The run's hash chain, each link's entry recomputed from its row, and whether it still holds. */
    audit: (principal: Principal, executionId: string): Promise<RunAudit> =>
      uow(scopeOf(principal), async (m) => {
        const run = await executionRepo.mustFindExecution(m, executionId);
        return { ...(await chainOf(m, run)), lineage: await lineageOf(m, run) };
      }),
  };
}

export type RunService = ReturnType<typeof createRunService>;
