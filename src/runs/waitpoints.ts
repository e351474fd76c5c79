import { randomBytes } from 'node:crypto';
import Ajv from 'ajv';
import type { EntityManager } from 'typeorm';
import type { CapabilityCall } from '../capabilities/define';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { sha256Hex } from '../platform/auth/tokens';
import { iso } from '../platform/dates';
import { affectedRows } from '../platform/db/query';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { ConflictError, NotFoundError, ValidationFailedError } from '../platform/errors';
import type { OutboxRelay } from '../platform/outbox/relay';
import { LIMITS } from '../rules/limits';
import type { RunError, RunExecution, RunStatus } from './entities';
import { FINISHED_STATUSES } from './entities';
import * as executionRepo from './execution-repository';
import * as stepRepo from './step-repository';
import type { StepOutcome } from './step-runner';
import { endWaits, recordWaitpointCreated, recordWaitpointSettled, runOutcome } from './waitpoint-events';
import type { WaitpointKind, WaitpointRow, WaitpointStatus } from './waitpoint-repository';
import * as waitRepo from './waitpoint-repository';

/** The tools whose step waits (issue 40 item 3): the step's call makes a waitpoint, the workflow waits on it. */
export const WAIT_TOOLS: ReadonlySet<string> = new Set(['run.sleep', 'run.wait_for', 'runs.wait']);
export const isWaitTool = (tool: string) => WAIT_TOOLS.has(tool);

/** A waitpoint's one-time token starts with this. */
export const WAITPOINT_TOKEN_MARKER = 'wpt_';

const isFinished = (status: RunStatus) => FINISHED_STATUSES.includes(status);
// output_schema is JSON Schema (draft-07, ajv's default); formats are not checked.
const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });

/** 422 `run_only_tool` (the issue's `type`, in the validation body every 422 has): only a run's step may call it. */
export const runOnlyTool = (tool: string) =>
  new ValidationFailedError([
    {
      loc: ['body'],
      msg: `${tool} is a step of a run only; dispatch a run (POST /v1/runs) with it`,
      type: 'run_only_tool',
    },
  ]);

/** The step a call is: a run's step calls its tool with the step key `<execution_id>:<step_no>`. */
export function stepOfCall(call: Pick<CapabilityCall, 'runId' | 'idempotencyKey'>) {
  if (!call.runId || !call.idempotencyKey.startsWith(`${call.runId}:`)) return null;
  const stepNo = Number(call.idempotencyKey.slice(call.runId.length + 1));
  return Number.isInteger(stepNo) ? { executionId: call.runId, stepNo } : null;
}

/** Why `schema` is not a JSON Schema ajv can check, or null. */
export function schemaProblem(schema: Record<string, unknown>): string | null {
  if (JSON.stringify(schema).length > LIMITS.runs.waits.schemaBytes) {
    return `output_schema is longer than ${LIMITS.runs.waits.schemaBytes} bytes`;
  }
  try {
    ajv.compile(schema);
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : 'not a JSON Schema';
  }
}

/** A run's outcome as `runs.wait` answers it. */
export const runOutcomeOf = (run: RunExecution) => ({
  ...runOutcome({
    id: run.id,
    workspace_id: run.workspaceId,
    agent: run.agent,
    status: run.status,
    output: run.output,
    error: run.error,
    credits_charged: run.creditsCharged,
    finished_at: run.finishedAt,
  }),
  status: run.status,
});

/** A waitpoint as the API shows it: never its token. */
export const waitpointView = (wp: WaitpointRow) => ({
  waitpoint_id: wp.id,
  execution_id: wp.execution_id,
  step_no: wp.step_no,
  kind: wp.kind,
  name: wp.name,
  status: wp.status,
  output_schema: wp.output_schema,
  output: wp.output ?? null,
  awaited_execution_id: wp.awaited_execution_id,
  expires_at: wp.expires_at ? iso(wp.expires_at) : null,
  created_at: iso(wp.created_at),
  completed_at: wp.completed_at ? iso(wp.completed_at) : null,
});
export type WaitpointView = ReturnType<typeof waitpointView>;

/**
 * A wait step's call: its waitpoint, made once per step (a retry finds it). `event` waitpoints get a
 * one-time token, answered only by the call that made the live one.
 */
export async function beginWait(
  uow: UnitOfWork,
  call: CapabilityCall,
  tool: string,
  spec: {
    kind: WaitpointKind;
    name?: string;
    seconds?: number;
    outputSchema?: Record<string, unknown>;
    awaited?: string;
  },
): Promise<{ waitpoint: WaitpointRow; token: string | null; run: RunExecution | null }> {
  const step = stepOfCall(call);
  if (!step) throw runOnlyTool(tool);
  const token = spec.kind === 'event' ? `${WAITPOINT_TOKEN_MARKER}${randomBytes(32).toString('base64url')}` : null;
  return uow(scopeOf(call.principal), async (m) => {
    let awaited: RunExecution | null = null;
    if (spec.awaited) {
      awaited = await executionRepo.findExecution(m, spec.awaited);
      if (!awaited) throw new NotFoundError({ error: 'run_not_found', execution_id: spec.awaited });
      if (awaited.id === step.executionId) {
        throw new ValidationFailedError([
          { loc: ['body', 'execution_id'], msg: 'A run cannot wait for itself', type: 'value_error' },
        ]);
      }
    }
    const waitpoint = await waitRepo.upsertWaitpoint(m, {
      workspaceId: call.principal.workspaceId,
      ...step,
      kind: spec.kind,
      name: spec.name ?? null,
      outputSchema: spec.outputSchema ?? null,
      awaitedExecutionId: spec.awaited ?? null,
      tokenHash: token ? sha256Hex(token) : null,
      seconds: spec.seconds ?? null,
    });
    return { waitpoint, token: waitpoint.fresh_token ? token : null, run: awaited };
  });
}

/** The wait steps' half of the run workflow's activities (`workflows/run-waits.ts` drives them). */
export function createWaitSteps(deps: {
  uow: UnitOfWork;
  /** The step runner's completion: the step's row, its chain link and event, and with `finish` the run's end. */
  completeStep: (
    workspaceId: string,
    executionId: string,
    stepNo: number,
    outcome: { status: 'SUCCEEDED' | 'FAILED'; output: unknown; error: RunError | null; creditsCharged: number },
    finish?: boolean,
  ) => Promise<{ run?: RunStatus } | null>;
}) {
  const { uow } = deps;
  type Ref = { workspaceId: string; executionId: string; stepNo: number };

  /**
   * The waitpoint as the wait reads it; a `runs.wait` whose run has finished is completed here (a re-check,
   * or a run that finished before the wait began), without a signal: the wait reads it from this call.
   */
  const state = (ref: Ref) =>
    uow({ workspaceId: ref.workspaceId }, async (m) => {
      await executionRepo.lockExecution(m, ref.executionId);
      const run = await executionRepo.mustFindExecution(m, ref.executionId);
      let wp = await waitRepo.findWaitpointOfStep(m, ref.executionId, ref.stepNo);
      if (!wp) throw new NotFoundError({ error: 'waitpoint_not_found', step: ref.stepNo });
      if (wp.kind === 'run' && wp.status === 'waiting' && wp.awaited_execution_id) {
        const awaited = await executionRepo.mustFindExecution(m, wp.awaited_execution_id);
        if (isFinished(awaited.status)) {
          const done = await waitRepo.settleWaitpoint(m, wp.id, 'completed', runOutcomeOf(awaited));
          if (done) {
            await recordWaitpointSettled(m, done, false);
            wp = done;
          }
        }
      }
      return { status: wp.status, expiresAt: wp.expires_at ? iso(wp.expires_at) : null, run: run.status };
    });

  return {
    waitpointState: state,

    /** Its time has come (on the database's clock): a sleep is over, any other wait timed out. */
    async expireWaitpoint(ref: Ref) {
      await uow({ workspaceId: ref.workspaceId }, async (m) => {
        await executionRepo.lockExecution(m, ref.executionId);
        const wp = await waitRepo.findWaitpointOfStep(m, ref.executionId, ref.stepNo);
        if (wp?.status !== 'waiting') return;
        const done = await waitRepo.settleWaitpoint(
          m,
          wp.id,
          wp.kind === 'sleep' ? 'completed' : 'timed_out',
          null,
          null,
          true,
        );
        if (done) await recordWaitpointSettled(m, done, false);
      });
      return state(ref);
    },

    /**
     * The wait is over: the step completes with the waitpoint's outcome (a timeout fails it with
     * `waitpoint_timeout`), the run goes on RUNNING (or, `finish`, ends with it). Safe to repeat.
     */
    async settleWaitStep(ref: Ref, finish = false): Promise<StepOutcome> {
      const { workspaceId, executionId, stepNo } = ref;
      const seen = await uow({ workspaceId }, async (m) => {
        const run = await executionRepo.mustFindExecution(m, executionId);
        const step = await stepRepo.findStep(m, executionId, stepNo);
        const wp = await waitRepo.findWaitpointOfStep(m, executionId, stepNo);
        if (!step || !wp) throw new NotFoundError({ error: 'waitpoint_not_found', step: stepNo });
        const going = !isFinished(run.status) && wp.status === 'completed' && step.status === 'RUNNING';
        if (going && !finish) await executionRepo.setStatus(m, executionId, 'RUNNING', 'WAITING');
        return { run, step, wp };
      });
      const recorded = (): StepOutcome => {
        const { step, run } = seen;
        if (step.status === 'FAILED') return { status: 'FAILED', error: step.error ?? undefined };
        if (step.status === 'SUCCEEDED') return { status: 'SUCCEEDED', ...(finish ? { run: run.status } : {}) };
        return { status: 'CANCELLED' };
      };
      const { run, step, wp } = seen;
      if (step.status !== 'RUNNING' || isFinished(run.status) || wp.status === 'cancelled') return recorded();
      if (wp.status === 'waiting') throw new Error(`waitpoint ${wp.id} is still waiting`);
      const interim = (step.output ?? {}) as Record<string, unknown>;
      const failure: RunError = {
        code: 'waitpoint_timeout',
        message: `The waitpoint ${wp.name ?? wp.id} was not completed in time`,
        step: stepNo,
      };
      const outcome =
        wp.status === 'completed'
          ? { status: 'SUCCEEDED' as const, output: finalOutput(wp, interim), error: null, creditsCharged: 0 }
          : { status: 'FAILED' as const, output: null, error: failure, creditsCharged: 0 };
      const done = await deps.completeStep(workspaceId, executionId, stepNo, outcome, finish);
      if (!done) {
        const again = await uow({ workspaceId }, (m) => stepRepo.findStep(m, executionId, stepNo));
        seen.step = again!;
        return recorded();
      }
      return outcome.status === 'FAILED' ? { status: 'FAILED', error: failure } : { status: 'SUCCEEDED', ...done };
    },
  };
}

/** The step's output once its wait is over: what it showed while waiting, completed (never the token again). */
function finalOutput(wp: WaitpointRow, interim: Record<string, unknown>): unknown {
  const completedAt = wp.completed_at ? iso(wp.completed_at) : null;
  if (wp.kind === 'run') return { ...(wp.output as Record<string, unknown>), waitpoint_id: wp.id };
  if (wp.kind === 'sleep') return { ...interim, status: 'completed', woke_at: completedAt };
  return { ...interim, token: null, status: 'completed', output: wp.output ?? null, completed_at: completedAt };
}

/**
 * A wait step's call came back: the run shows the step's first output (an event waitpoint's token,
 * once), records `waitpoint.created` and goes WAITING. A retry after this committed changes nothing.
 */
export function holdWaitStep(
  uow: UnitOfWork,
  ref: { workspaceId: string; executionId: string; stepNo: number },
  result: unknown,
): Promise<StepOutcome> {
  const { workspaceId, executionId, stepNo } = ref;
  return uow({ workspaceId }, async (m): Promise<StepOutcome> => {
    await executionRepo.lockExecution(m, executionId);
    const run = await executionRepo.mustFindExecution(m, executionId);
    if (isFinished(run.status)) {
      // Made after its run finished (a cancel while the step's call ran): it ends at once.
      await endWaits(m, executionId, stepNo);
      return { status: 'CANCELLED' };
    }
    const shown = await affectedRows(
      m,
      `UPDATE run_steps SET output = $3 WHERE execution_id = $1 AND step_no = $2 AND status = 'RUNNING'
         AND output IS NULL`,
      [executionId, stepNo, JSON.stringify(result ?? null)],
    );
    const wp = await waitRepo.findWaitpointOfStep(m, executionId, stepNo);
    const token = (result as { token?: unknown } | null)?.token;
    if (shown && wp) await recordWaitpointCreated(m, wp, typeof token === 'string' ? token : null);
    await executionRepo.setStatus(m, executionId, 'WAITING', 'RUNNING');
    return { status: 'WAITING' };
  });
}

/** The API's waitpoints: list them, and complete an event waitpoint (with a key, or with its token). */
export function createWaitpointService(deps: { uow: UnitOfWork; outbox: Pick<OutboxRelay, 'kick'> }) {
  const { uow } = deps;

  /** Completes the waitpoint `id` in the transaction's workspace; with `tokenHash`, found by its token. */
  async function completeIn(
    m: EntityManager,
    id: string,
    output: unknown,
    who: { userId: string | null; tokenHash?: string },
  ) {
    const notFound = new NotFoundError({ error: 'waitpoint_not_found', waitpoint_id: id });
    const found = who.tokenHash
      ? await waitRepo.findWaitpointByToken(m, who.tokenHash)
      : await waitRepo.findWaitpoint(m, id);
    if (!found || found.id !== id) throw notFound;
    // Its run first, then the waitpoint: the order of every writer of both.
    await executionRepo.lockExecution(m, found.execution_id);
    const wp = (await waitRepo.lockWaitpoint(m, id))!;
    if (wp.kind !== 'event') {
      throw new ConflictError({
        error: 'waitpoint_not_completable',
        kind: wp.kind,
        message: `A ${wp.kind} waitpoint completes by itself`,
      });
    }
    if (wp.status !== 'waiting') {
      throw new ConflictError({
        error: 'waitpoint_not_waiting',
        status: wp.status,
        message: `The waitpoint is ${wp.status} already`,
      });
    }
    checkOutput(wp.output_schema, output);
    const done = (await waitRepo.settleWaitpoint(m, id, 'completed', output, who.userId))!;
    await recordWaitpointSettled(m, done);
    return done;
  }

  return {
    async complete(principal: Principal, id: string, output: unknown): Promise<WaitpointView> {
      const done = await uow(scopeOf(principal), (m) => completeIn(m, id, output, { userId: principal.userId }));
      deps.outbox.kick(principal.workspaceId);
      return waitpointView(done);
    },

    /** With the waitpoint's own token (`wpt_…`): its workspace is the token's; another id is 404. */
    async completeWithToken(token: string, id: string, output: unknown): Promise<WaitpointView> {
      const tokenHash = sha256Hex(token);
      const workspaceId = await uow({}, (m) => waitRepo.tokenWorkspace(m, tokenHash));
      if (!workspaceId) throw new NotFoundError({ error: 'waitpoint_not_found', waitpoint_id: id });
      const done = await uow({ workspaceId }, (m) => completeIn(m, id, output, { userId: null, tokenHash }));
      deps.outbox.kick(workspaceId);
      return waitpointView(done);
    },

    async list(principal: Principal, query: { status?: WaitpointStatus; execution_id?: string; limit?: number }) {
      const limit = query.limit ?? LIMITS.runs.waits.list.default;
      const rows = await uow(scopeOf(principal), (m) =>
        waitRepo.listWaitpoints(m, { status: query.status, executionId: query.execution_id }, limit),
      );
      return { waitpoints: rows.map(waitpointView) };
    },
  };
}
export type WaitpointService = ReturnType<typeof createWaitpointService>;

/** 422 when the output is too long or fails the waitpoint's output_schema, each issue under `body.output`. */
function checkOutput(schema: Record<string, unknown> | null, output: unknown) {
  if (JSON.stringify(output ?? null).length > LIMITS.runs.waits.outputBytes) {
    throw new ValidationFailedError([
      { loc: ['body', 'output'], msg: `Longer than ${LIMITS.runs.waits.outputBytes} bytes`, type: 'too_long' },
    ]);
  }
  if (!schema) return;
  const validate = ajv.compile(schema);
  if (validate(output)) return;
  throw new ValidationFailedError(
    (validate.errors ?? []).map((issue) => ({
      loc: ['body', 'output', ...issue.instancePath.split('/').filter(Boolean)],
      msg: issue.message ?? 'does not match output_schema',
      type: 'output_schema',
    })),
  );
}
