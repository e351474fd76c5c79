import { randomBytes } from 'node:crypto';
import Ajv from 'ajv';
import type { EntityManager } from 'typeorm';
import type { CapabilityCall } from '../capabilities/define';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { sha256Hex } from '../platform/auth/tokens';
import { iso } from '../platform/dates';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { ConflictError, NotFoundError, ValidationFailedError } from '../platform/errors';
import type { OutboxRelay } from '../platform/outbox/relay';
import { LIMITS } from '../rules/limits';
import type { RunExecution } from './entities';
import * as executionRepo from './execution-repository';
import { recordWaitpointSettled, runOutcome } from './waitpoint-events';
import type { WaitpointKind, WaitpointRow, WaitpointStatus } from './waitpoint-repository';
import * as waitRepo from './waitpoint-repository';

/** The tools whose step waits (issue 40 item 3): the step's call makes a waitpoint, the workflow waits on it. */
export const WAIT_TOOLS: ReadonlySet<string> = new Set(['run.sleep', 'run.wait_for', 'runs.wait']);
export const isWaitTool = (tool: string) => WAIT_TOOLS.has(tool);

/** A waitpoint's one-time token starts with this. */
export const WAITPOINT_TOKEN_MARKER = 'wpt_';

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
      // Share-locked: the awaited run's finish either committed before this read (the step's hold then
      // settles the wait) or reads this waitpoint once it commits (and wakes the run): never neither.
      awaited = await executionRepo.findExecutionShared(m, spec.awaited);
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
