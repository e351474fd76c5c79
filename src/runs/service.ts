import type { EntityManager } from 'typeorm';
import type { z } from 'zod';
import type { AnyCapability } from '../capabilities/define';
import { requestHash } from '../capabilities/idempotency';
import type { CapabilityService } from '../capabilities/service';
import { scopeFor } from '../capabilities/service';
import { findChangeSetByApproval } from '../change-sets/repository';
import { APPROVAL_STATUS_OF } from '../change-sets/schemas';
import { changeSetsWithApprovalStatus, resolveChangeSetApproval } from '../change-sets/service';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { freeze } from '../platform/auth/stored-principal';
import { decodeKeysetCursor, encodeKeysetCursor } from '../platform/db/keyset-cursor';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { ValidationIssue } from '../platform/errors';

type ValidationLoc = ValidationIssue['loc'];

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
import type { RunCallbackService } from '../run-callbacks/service';
import type { FilterPool } from '../triggers/filter-pool';
import { approvingVotes, auditApproval, auditVote } from './approval-deadlines';
import { readApprovalPolicy, saveApprovalPolicy } from './approval-policy';
import type { ApprovalRules, ApprovalRulesPut } from './approval-rules';
import { checkApprovalRules, namedApprovers, readApprovalRules, saveApprovalRules } from './approval-rules';
import { approvalEntry, GENESIS_HASH, stepEntry, verifyChain, voteEntry } from './audit';
import { admit, lockConcurrencyKey, recordControl } from './concurrency';
import type { RerunRequest } from './control-schemas';
import { separationWithin } from './dispatcher-identity';
import { judgeEdit } from './edit-judgement';
import type { RunApproval, RunExecution } from './entities';
import type { RunDispatched } from './events';
import { runDispatched, runStartInput } from './events';
import * as repo from './repository';
import type { RerunPlan } from './rerun';
import { planRerun, recordRerun, rerunEntry } from './rerun';
import { recordRunEvent } from './run-events';
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
import { approvalRow, changeSetApprovalRow, stepRow, summaryOf } from './views';
import { runChangedSignal, runWorkflow, runWorkflowId } from './workflow';

/** Where a dispatch came from, beyond its body: the run schedule whose action dispatched it, or the run it re-runs. */
export interface DispatchOrigin {
  scheduleId?: string;
  /** A rerun's plan (`rerun.ts`): the earlier run and the steps it reuses. */
  rerun?: RerunPlan & { earlierId: string };
}

/** The 422 issues of one step (at `loc`): an unknown tool, or an input its tool's schema refuses. */
function stepIssues(tools: ReadonlyMap<string, AnyCapability>, step: PlaybookStep, at: number, where?: ValidationLoc) {
  const loc = where ?? ['body', 'input', 'steps', at];
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
  /** A dispatch's own callback (issue 26 part 2), created in the dispatch's transaction. */
  callbacks?: Pick<RunCallbackService, 'attachToDispatch' | 'checkDispatchCallback'>;
  /** The approval rules' input filters, for judging an approval's edited input (NM-4). */
  filters?: Pick<FilterPool, 'evaluate'>;
}) {
  const { uow, outbox, temporal, capabilities, logger, filters } = deps;
  const tools = new Map(capabilities.tools.map((tool) => [tool.name, tool]));

  /** Wakes the workflow; a lost signal is covered by its re-check timer, so failures are only logged. */
  async function wake(executionId: string, reason: 'approval_resolved' | 'cancelled') {
    try {
      await temporal.workflows.handle(runWorkflow, runWorkflowId(executionId)).signal(runChangedSignal, { reason });
    } catch (error) {
      logger.warn({ err: error, execution_id: executionId }, 'run signal failed; the re-check timer will notice');
    }
  }

  /**
   * A RESPOND (issue 32 part 2): the step never runs; it is recorded SKIPPED with the reviewer's
   * message as its error, which is what the llm agent reads as the tool's result, and chained.
   */
  async function respondInsteadOfStep(m: EntityManager, approval: RunApproval, message: string) {
    const error = {
      code: 'reviewer_responded',
      message: `The reviewer responded instead: ${message}`,
      step: approval.stepNo,
    };
    const step = await repo.completeStepLocked(m, approval.executionId, approval.stepNo, {
      status: 'SKIPPED',
      output: null,
      error,
      creditsCharged: 0,
    });
    if (!step) return;
    const audit = await repo.appendAuditLocked(m, {
      workspaceId: approval.workspaceId,
      executionId: approval.executionId,
      kind: 'TOOL',
      refId: step.id,
      entry: stepEntry(step),
    });
    await recordRunEvent(m, approval.executionId, {
      type: 'step.failed',
      data: { step_no: step.stepNo, step_id: step.id, tool: step.tool, error },
      audit,
    });
  }

  /** Approvals as the API shows them, each with its votes (issue 32 part 4). */
  const withVotes = async (m: EntityManager, rows: readonly RunApproval[]): Promise<ApprovalRow[]> => {
    const votes = await repo.votesOf(
      m,
      rows.map((row) => row.id),
    );
    return rows.map((row) =>
      approvalRow(
        row,
        votes.filter((vote) => vote.approval_id === row.id),
      ),
    );
  };

  const detail = async (m: EntityManager, run: RunExecution): Promise<RunDetail> => ({
    ...summaryOf(run),
    input: run.input,
    output: run.output ?? null,
    steps: (await repo.stepsOf(m, run.id)).map(stepRow),
    approvals: await withVotes(m, await repo.approvalsOf(m, run.id)),
  });

  /**
   * The checks of `POST /v1/runs` beyond its schema: known tools, inputs their schemas accept (422),
   * and scopes the dispatching credential holds (400). Webhook triggers run them on their template.
   */
  function validate(principal: Pick<Principal, 'scopes'>, body: RunTemplate): void {
    const planned = body.agent === 'playbook' ? body.input.steps : [];
    const issues = planned.flatMap((step, at) => stepIssues(tools, step, at));
    if (issues.length > 0) throw new ValidationFailedError(issues);
    checkScopes(principal, planned);
  }

  /** 400 when the credential lacks a scope one of the steps' tools needs. */
  function checkScopes(principal: Pick<Principal, 'scopes'>, planned: readonly PlaybookStep[]): void {
    const missing = planned
      .map((step) => scopeFor(tools.get(step.tool)!))
      .find((scope) => !principal.scopes.has(scope));
    if (missing) throw new BadRequestError(`The run's steps need scope ${missing}, which this credential lacks`);
  }

  /** The `run.dispatched` event's payload: what the workflow's start needs beyond the rows. */
  const dispatchedPayload = (id: string, body: RunTemplate, rerun: boolean): RunDispatched => ({
    execution_id: id,
    agent: body.agent,
    step_count: body.agent === 'playbook' ? body.input.steps.length : 0,
    ...(body.agent === 'llm' ? { goal: body.input.goal.slice(0, 100) } : {}),
    ...(body.agent === 'playbook' && !rerun
      ? {
          steps: body.input.steps.map((step) => ({
            tool: step.tool,
            // A stored template (a schedule's, a trigger's) is dispatched as saved, without zod's default.
            requires_approval: step.requires_approval === true,
          })),
        }
      : {}),
    ...(body.tags?.length ? { tags: [...new Set(body.tags)] } : {}),
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

  /**
   * The dispatch's writes; with the event's payload when it wrote one (not for a duplicate, nor for
   * a run that waits for a concurrency slot), and the runs a `cancel_previous` key cancelled.
   */
  async function write(
    m: EntityManager,
    principal: Principal,
    body: DispatchRunRequest,
    origin: DispatchOrigin = {},
  ): Promise<{ response: DispatchRunResponse; dispatched?: RunDispatched; cancelled?: string[] }> {
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
        queued_reason: run.status === 'QUEUED' && run.heldStart ? 'concurrency_limit' : null,
      };
    };
    const findEarlier = async () => {
      const earlier = key ? await repo.findExecutionByKey(m, key) : null;
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
    const admission = body.concurrency ? await admit(m, principal.workspaceId, body.concurrency) : undefined;
    const inserted = await repo.insertExecution(m, {
      workspaceId: principal.workspaceId,
      userId: principal.userId,
      agent: body.agent,
      input: body.input,
      principal: freeze(principal),
      idempotencyKey: key,
      requestHash: hash,
      scheduleId: origin.scheduleId ?? null,
    });
    // Taken by a concurrent dispatch, which has committed by now (ON CONFLICT waited for it).
    if (!inserted) return { response: answer((await repo.findExecutionByKey(m, key!))!, true) };
    const { id } = inserted;
    await repo.insertSteps(
      m,
      principal.workspaceId,
      id,
      planned.map((step) => ({ tool: step.tool, input: step.input, requiresApproval: step.requires_approval })),
    );
    const cancelled = admission?.kind === 'start' ? (admission.cancel ?? []) : [];
    for (const older of cancelled) await cancelWithin(m, older, false);
    const dispatched = dispatchedPayload(id, body, rerun !== undefined);
    const held = admission?.kind === 'hold';
    // A held run says why it waits; its next event comes when a slot frees (concurrency.ts).
    await recordRunEvent(m, id, {
      type: 'run.status',
      data: held ? { status: 'QUEUED', queued_reason: 'concurrency_limit' } : { status: 'QUEUED' },
    });
    if (body.tags?.length || body.concurrency) {
      await recordControl(m, id, {
        tags: [...new Set(body.tags ?? [])],
        concurrency: body.concurrency,
        held: held ? dispatched : undefined,
      });
    }
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
      queued_reason: held ? 'concurrency_limit' : null,
    };
    const response = callback ? { ...row, callback } : row;
    // A held run's start is enqueued when a slot frees (concurrency.ts).
    if (held) return { response, cancelled };
    await enqueueEvent(m, runDispatched, { workspaceId: principal.workspaceId, aggregateId: id, payload: dispatched });
    return { response, dispatched, cancelled };
  }

  /**
   * Cancels a run in the caller's transaction: idempotent for a cancelled run, 409 for one that
   * finished otherwise; its pending approvals are cancelled into its chain. `releaseSlot` as for
   * `repo.cancelExecution`.
   */
  async function cancelWithin(m: EntityManager, executionId: string, releaseSlot = true) {
    const found = await repo.mustFindExecution(m, executionId);
    if (found.status === 'CANCELLED') return { run: found, started: false };
    const pending = (await repo.approvalsOf(m, executionId)).filter((approval) => approval.status === 'pending');
    if (!(await repo.cancelExecution(m, executionId, releaseSlot))) {
      throw new ConflictError({ error: 'run_finished', status: found.status, message: 'The run has finished' });
    }
    for (const approval of pending) await auditApproval(m, approval.id);
    await repo.recordFinished(m, executionId);
    // A run that waited for a concurrency slot never started its workflow: nothing to wake.
    return { run: await repo.mustFindExecution(m, executionId), started: !found.heldStart };
  }

  /** After a dispatch's commit: start its workflow, wake the runs it cancelled. */
  async function afterDispatch(
    workspaceId: string,
    written: { dispatched?: RunDispatched; cancelled?: string[] },
  ): Promise<void> {
    for (const older of written.cancelled ?? []) await wake(older, 'cancelled');
    if (written.cancelled?.length) outbox.kick(workspaceId);
    if (written.dispatched) await launch(workspaceId, written.dispatched);
  }

  /** A run's hash chain, each link's entry recomputed from its row, and whether it still holds. */
  async function chainOf(m: EntityManager, run: RunExecution) {
    const links = await repo.auditOf(m, run.id);
    const refsOf = (kind: 'APPROVAL' | 'STEP' | 'VOTE') =>
      links
        .filter((link) => (kind === 'STEP' ? ['TOOL', 'DECISION'].includes(link.kind) : link.kind === kind))
        .map((link) => link.refId);
    const entries = new Map<string, Record<string, unknown>>([
      ...(await repo.stepsByIds(m, refsOf('STEP'))).map((step) => [step.id, stepEntry(step)] as const),
      ...(await repo.approvalsByIds(m, refsOf('APPROVAL'))).map((row) => [row.id, approvalEntry(row)] as const),
      ...(await repo.votesByIds(m, refsOf('VOTE'))).map((vote) => [vote.id, voteEntry(vote)] as const),
    ]);
    // A RERUN link covers the run's own lineage columns.
    const entryOf = (link: (typeof links)[number]) =>
      link.kind === 'RERUN' ? (link.refId === run.id ? rerunEntry(run) : null) : (entries.get(link.refId) ?? null);
    const views = links.map((link) => ({
      seq: link.seq,
      kind: link.kind,
      ref_id: link.refId,
      entry: entryOf(link),
      prev_hash: link.prevHash,
      hash: link.hash,
      created_at: link.createdAt.toISOString(),
    }));
    return { steps: views, ...verifyChain(views, (seq) => views[seq]?.entry ?? null) };
  }

  /** A rerun's lineage: whether the head its link 0 names is a link of the earlier chain, and that chain holds. */
  async function lineageOf(m: EntityManager, run: RunExecution) {
    if (!run.rerunOf || !run.rerunOfHeadHash) return null;
    const earlier = await repo.findExecution(m, run.rerunOf);
    const chain = earlier ? await chainOf(m, earlier) : null;
    const found =
      chain !== null &&
      (run.rerunOfHeadHash === GENESIS_HASH || chain.steps.some((link) => link.hash === run.rerunOfHeadHash));
    return { rerun_of: run.rerunOf, head_hash: run.rerunOfHeadHash, found, earlier_valid: chain?.valid ?? false };
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
      if (body.callback) deps.callbacks?.checkDispatchCallback(body.callback);
      const written = await uow(scopeOf(principal), (m) => write(m, principal, body));
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
        const earlier = await repo.mustFindExecution(m, executionId);
        const plan = await planRerun(m, earlier, body);
        const planned = plan.template.agent === 'playbook' ? plan.template.input.steps : [];
        const executed = planned.slice(plan.fromStep);
        const issues = executed.flatMap((step, at) => {
          const stepNo = plan.fromStep + at;
          const overridden = body.input_overrides?.[String(stepNo)] !== undefined;
          return stepIssues(tools, step, stepNo, overridden ? ['body', 'input_overrides', String(stepNo)] : undefined);
        });
        if (issues.length > 0) throw new ValidationFailedError(issues);
        checkScopes(principal, executed);
        return write(m, principal, plan.template, { rerun: { ...plan, earlierId: earlier.id } });
      });
      await afterDispatch(principal.workspaceId, written);
      return written.response;
    },

    // One snapshot: the run, its steps and its approvals as of one moment (never RUNNING beside the
    // approval it waits on).
    get: (principal: Principal, executionId: string): Promise<RunDetail> =>
      uow({ ...scopeOf(principal), snapshot: true }, async (m) =>
        detail(m, await repo.mustFindExecution(m, executionId)),
      ),

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
      const { run, started } = await uow(scopeOf(principal), (m) => cancelWithin(m, executionId));
      if (started) await wake(executionId, 'cancelled');
      // Its run.finished callbacks, queued with the cancel, leave now, and so does the start of a
      // waiting run its concurrency slot went to.
      outbox.kick(principal.workspaceId);
      return summaryOf(run);
    },

    /** The run's hash chain, each link's entry recomputed from its row, and whether it still holds. */
    audit: (principal: Principal, executionId: string): Promise<RunAudit> =>
      uow(scopeOf(principal), async (m) => {
        const run = await repo.mustFindExecution(m, executionId);
        return { ...(await chainOf(m, run)), lineage: await lineageOf(m, run) };
      }),

    approvalPolicy: (principal: Principal): Promise<ApprovalPolicy> => uow(scopeOf(principal), readApprovalPolicy),

    setApprovalPolicy: (principal: Principal, policy: ApprovalPolicy): Promise<ApprovalPolicy> =>
      uow(scopeOf(principal), async (m) => {
        await saveApprovalPolicy(m, principal.workspaceId, principal.userId, policy);
        return readApprovalPolicy(m);
      }),

    /** The approval rules in force (issue 32), or the default: no rules, `allow`. */
    approvalRules: (principal: Principal): Promise<ApprovalRules> => uow(scopeOf(principal), readApprovalRules),

    /** Adds the next version of the rules; steps decided by earlier versions keep their decision. */
    setApprovalRules: (principal: Principal, body: ApprovalRulesPut): Promise<ApprovalRules> => {
      checkApprovalRules(body);
      return uow(scopeOf(principal), async (m) => {
        // The approvers a rule names must be members now (a member who leaves later simply cannot vote).
        checkApprovalRules(body, new Set(await repo.membersAmong(m, namedApprovers(body))));
        await saveApprovalRules(m, principal.workspaceId, principal.userId, body);
        return readApprovalRules(m);
      });
    },

    /** Runs' approvals and staged change-sets' (issue 31 part 4), newest first. */
    listApprovals: (principal: Principal, query: { status?: RunApproval['status']; limit: number }) =>
      uow(scopeOf(principal), async (m) => {
        const runs = await withVotes(m, await repo.listApprovals(m, query));
        const staged = (await changeSetsWithApprovalStatus(m, query)).map(changeSetApprovalRow);
        const newestFirst = [...runs, ...staged].sort((a, b) =>
          a.requested_at === b.requested_at ? 0 : Date.parse(b.requested_at) - Date.parse(a.requested_at),
        );
        return { approvals: newestFirst.slice(0, query.limit) };
      }),

    getApproval: (principal: Principal, approvalId: string): Promise<ApprovalRow> =>
      uow(scopeOf(principal), async (m) => {
        const approval = await repo.findApprovalById(m, approvalId);
        if (approval) return (await withVotes(m, [approval]))[0]!;
        const staged = await findChangeSetByApproval(m, approvalId);
        if (staged) return changeSetApprovalRow(staged);
        throw new NotFoundError({ error: 'approval_not_found', approval_id: approvalId });
      }),

    /**
     * PENDING → decision exactly once (409 afterwards, when the run has finished, or past the approval's
     * deadline), then wakes the run. Never by the credential that dispatched the run, nor by its user
     * where the workspace's approval policy says so (403); the resolving credential is recorded with
     * the decision. An approval with approvers (issue 32 part 4) takes one vote per named person
     * (403 for anyone else, 409 for a second vote) and resolves when `min` of them approved, or at the
     * first rejection; each vote is a link of the run's chain.
     */
    async resolve(
      principal: Principal,
      approvalId: string,
      body: ResolveApprovalRequest,
    ): Promise<ResolveApprovalResponse> {
      const outcome = await uow(scopeOf(principal), async (m) => {
        const found = await repo.findApprovalById(m, approvalId);
        if (!found) {
          // A staged change-set's approval: applied (or rejected) here, in this one transaction.
          const staged = await resolveChangeSetApproval(m, principal, approvalId, body);
          if (!staged) throw new NotFoundError({ error: 'approval_not_found', approval_id: approvalId });
          return { changeSet: staged };
        }
        const run = await repo.mustFindExecution(m, found.executionId);
        const separation = await separationWithin(m, {
          dispatcher: { userId: run.userId, credential: run.principal.credential },
          resolver: principal,
        });
        if (separation.refusal) throw new ForbiddenError(separation.refusal);
        const { dispatcherResolved } = separation;
        // Issue 32 part 2: an edit is checked against the tool's schema, a RESPOND is for an llm run.
        if (body.input !== undefined) {
          const issues = stepIssues(tools, { tool: found.tool, input: body.input, requires_approval: false }, 0, [
            'body',
          ]);
          if (issues.length > 0) throw new ValidationFailedError(issues);
        }
        // NM-4: the edit runs as the dispatcher, so the rules judge it as they would the step's own input.
        if (body.input !== undefined && body.decision === 'APPROVED') {
          await judgeEdit(m, { run, approval: found, edit: body.input, resolverUserId: principal.userId, filters });
        }
        if (body.decision === 'RESPOND' && run.agent !== 'llm') {
          throw new ValidationFailedError([
            {
              loc: ['body', 'decision'],
              msg: 'RESPOND answers an llm run’s tool call; this is a playbook run',
              type: 'value_error',
            },
          ]);
        }
        // The run's lock, then the approval's, as the deadline's outcome takes them: of a resolve and an
        // expiry (or two votes) one goes first, and the other sees what it did.
        await repo.lockExecution(m, found.executionId);
        const { approval, due } = (await repo.lockApproval(m, approvalId))!;
        const conflict = () => {
          const pending = approval.status === 'pending';
          return new ConflictError({
            error: pending ? (due ? 'approval_expired' : 'run_finished') : 'approval_resolved',
            status: approval.status,
            message: pending
              ? due
                ? 'The approval’s deadline has passed; its on_expiry outcome applies'
                : 'The run has finished'
              : 'The approval was already resolved',
          });
        };
        if (approval.status !== 'pending' || due) throw conflict();
        const approvers = approval.approvers;
        let remaining = 0;
        if (approvers) {
          if (Array.isArray(approvers.from) && !approvers.from.includes(principal.userId)) {
            throw new ForbiddenError({
              error: 'not_an_approver',
              message: 'The approval rule that asked for this approval does not name you among its approvers',
            });
          }
          if (body.input !== undefined && approvers.min > 1) {
            throw new ValidationFailedError([
              {
                loc: ['body', 'input'],
                msg: `This approval needs ${approvers.min} approvers, who vote on the input as asked: no edits`,
                type: 'value_error',
              },
            ]);
          }
          const vote = await repo.insertVote(m, {
            workspaceId: approval.workspaceId,
            approval_id: approval.id,
            execution_id: approval.executionId,
            user_id: principal.userId,
            decision: body.decision,
            notes: body.notes ?? body.message ?? null,
            credential: principal.credential,
          });
          if (!vote) {
            throw new ConflictError({ error: 'already_voted', message: 'You have voted on this approval already' });
          }
          await auditVote(m, approval, vote);
          if (body.decision === 'APPROVED') {
            remaining = Math.max(0, approvers.min - approvingVotes(approval, await repo.votesOf(m, [approval.id])));
            if (remaining > 0) {
              return { executionId: approval.executionId, status: 'pending' as const, remaining, dispatcherResolved };
            }
          }
        }
        const status: 'approved' | 'responded' | 'rejected' =
          body.decision === 'APPROVED' ? 'approved' : body.decision === 'RESPOND' ? 'responded' : 'rejected';
        const resolved = await repo.resolveApproval(m, {
          approvalId,
          status,
          userId: principal.userId,
          credential: principal.credential,
          notes: body.notes ?? null,
          editedInput: body.input ?? null,
          response: body.decision === 'RESPOND' ? (body.message ?? null) : null,
        });
        if (!resolved) throw conflict();
        if (body.input !== undefined) {
          await repo.editStepInput(m, approval.executionId, approval.stepNo, body.input);
        }
        await auditApproval(m, approvalId);
        if (body.decision === 'RESPOND') await respondInsteadOfStep(m, approval, body.message!);
        return { executionId: resolved.execution_id, status, remaining, dispatcherResolved };
      });
      if (outcome.changeSet) {
        const { created, dispatcherResolved, ...changeSet } = outcome.changeSet;
        // The applied nodes' node.created (embedding, resolver) leave now that they are committed.
        if (created > 0) outbox.kick(principal.workspaceId);
        return {
          approval_id: approvalId,
          decision: body.decision,
          execution_id: null,
          change_set: changeSet,
          status: APPROVAL_STATUS_OF[changeSet.status],
          approvals_remaining: 0,
          dispatcher_resolved: dispatcherResolved,
        };
      }
      if (outcome.status !== 'pending') await wake(outcome.executionId, 'approval_resolved');
      return {
        approval_id: approvalId,
        decision: body.decision,
        execution_id: outcome.executionId,
        status: outcome.status,
        approvals_remaining: outcome.remaining,
        dispatcher_resolved: outcome.dispatcherResolved,
      };
    },
  };
}

export type RunService = ReturnType<typeof createRunService>;
