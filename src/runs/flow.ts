import type { EntityManager } from 'typeorm';
import type { FilterPool } from '../filters/pool';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { RateLimitedError, UnavailableError, ValidationFailedError } from '../platform/errors';
import type { OutboxRelay } from '../platform/outbox/relay';
import { enqueueEvent } from '../platform/outbox/relay';
import { LIMITS } from '../rules/limits';
import type { RunDispatched } from './events';
import { runFlowHeld } from './events';
import type { FlowKnob } from './flow-repository';
import {
  collapseInto,
  dueDebounced,
  FLOW_RELEASED,
  flowHeldRun,
  lockFlowKey,
  oldestThrottled,
  rateLimitWait,
  recordFlow,
  throttlePlan,
  throttleRoomMs,
  waitingDebounced,
} from './flow-repository';
import type { FlowKeyed, RunFlow } from './flow-schemas';
import { passToGate } from './priority-gate';
import type { DispatchRunRequest, DispatchRunResponse } from './schemas';
import { insertSteps } from './step-repository';

/**
 * Flow control on runs (issue 43 item 2). Every decision about a knob's key happens under one
 * transaction-scoped advisory lock on (knob, workspace, key), as concurrency keys' do (`concurrency.ts`):
 * - `rate_limit` counts the runs dispatched with the key in the last period and refuses one over it
 *   (a `RateLimitedError` with the seconds until the window has room);
 * - `throttle` plans the run's start one period after the `limit`-th latest planned start of the key,
 *   so no period holds more than `limit` starts and they come in dispatch order; a run whose start is
 *   later (or that queues behind waiting runs) is held QUEUED with its `run.dispatched` payload in
 *   `held_start`, as a concurrency key's waiting run is;
 * - `debounce` holds the first dispatch's run until `period_seconds` after the last dispatch with the
 *   key; a later dispatch, while it waits, replaces its input and steps and pushes its start out.
 * A held run's `run.flow_held` event (in the dispatch's transaction) starts its timer workflow
 * `run-flow-<execution_id>` (`workflows/run-flow.ts`), which sleeps until the row's start time and
 * releases every run of the key whose time has come, in dispatch order, to the priority gate
 * (`priority-gate.ts`), which enqueues their held starts in the same transaction as the workspace has
 * room. Rows, outbox and Temporal timers: a restart or an outage loses nothing.
 */

/** A dispatch's evaluated keys. */
export interface FlowKeys {
  throttle: string | null;
  rateLimit: string | null;
  debounce: string | null;
}

/** What a dispatch with flow does: start now, wait (held), or collapse into a waiting debounced run. */
export type FlowAdmission =
  | { kind: 'start' }
  | { kind: 'hold'; hold: 'throttle'; startAt: Date }
  | { kind: 'hold'; hold: 'debounce'; delaySeconds: number }
  | { kind: 'collapse'; into: { id: string; run_id: string }; delaySeconds: number };

const KNOB_FIELD = { throttle: 'throttle', rate_limit: 'rate_limit', debounce: 'debounce' } as const;

/**
 * The keys of a dispatch's flow: literal ones as they are, `key_expression`s evaluated over the run's
 * input in the filters' pool under its budget. A failed expression is 422 (503 while the pool is busy).
 */
export async function resolveFlowKeys(
  flow: RunFlow | undefined,
  input: Record<string, unknown>,
  filters: Pick<FilterPool, 'evaluate'> | undefined,
  workspaceId: string,
): Promise<FlowKeys> {
  const keyed = flow ? [flow.throttle, flow.rate_limit, flow.debounce] : [];
  const body = keyed.some((knob) => knob?.key_expression) ? JSON.stringify(input) : '';
  const keyOf = async (knob: FlowKnob, keyed: FlowKeyed | undefined): Promise<string | null> => {
    if (!keyed) return null;
    if (keyed.key !== undefined) return keyed.key;
    const loc = ['body', 'flow', KNOB_FIELD[knob], 'key_expression'];
    if (!filters)
      throw new ValidationFailedError([{ loc, msg: 'Key expressions are not evaluated here', type: 'value_error' }]);
    const outcome = await filters.evaluate(keyed.key_expression!, {
      headers: {},
      body: Buffer.from(body),
      contentType: 'application/json',
      trigger: { id: '', slug: '' },
      bare: true,
      selectChars: LIMITS.runs.flow.keyChars + 2,
      workspaceId,
    });
    if (outcome.result === 'error') {
      const why = outcome.error ?? 'filter_failed';
      if (why.startsWith('filter_busy')) throw new UnavailableError({ error: 'flow_key_busy', message: why }, 1);
      throw new ValidationFailedError([{ loc, msg: `The key expression failed: ${why}`, type: 'value_error' }]);
    }
    const value: unknown = JSON.parse(outcome.json ?? 'null');
    const key = typeof value === 'string' ? value : JSON.stringify(value);
    if (key.length === 0 || key.length > LIMITS.runs.flow.keyChars) {
      const msg = `The key expression yields a key of ${key.length} characters (1 to ${LIMITS.runs.flow.keyChars})`;
      throw new ValidationFailedError([{ loc, msg, type: 'value_error' }]);
    }
    return key;
  };
  return {
    throttle: await keyOf('throttle', flow?.throttle),
    rateLimit: await keyOf('rate_limit', flow?.rate_limit),
    debounce: await keyOf('debounce', flow?.debounce),
  };
}

/**
 * Locks the dispatch's keys for the rest of its transaction and decides: refused over the rate limit,
 * collapsed into a waiting debounced run, held until its throttled or debounced start, or started.
 */
export async function admitFlow(
  m: EntityManager,
  workspaceId: string,
  flow: RunFlow,
  keys: FlowKeys,
): Promise<FlowAdmission> {
  if (flow.rate_limit && keys.rateLimit !== null) {
    const { limit, period_seconds: period } = flow.rate_limit;
    await lockFlowKey(m, workspaceId, 'rate_limit', keys.rateLimit);
    const wait = await rateLimitWait(m, workspaceId, keys.rateLimit, limit, period);
    if (wait !== null) {
      throw new RateLimitedError(wait, {
        error: 'run_rate_limited',
        message: `${limit} run(s) with rate limit key ${keys.rateLimit} were dispatched in the last ${period} s`,
        rate_limit_key: keys.rateLimit,
        retry_after_seconds: wait,
      });
    }
  }
  if (flow.debounce && keys.debounce !== null) {
    const delaySeconds = flow.debounce.period_seconds;
    await lockFlowKey(m, workspaceId, 'debounce', keys.debounce);
    const waiting = await waitingDebounced(m, workspaceId, keys.debounce);
    return waiting
      ? { kind: 'collapse', into: waiting, delaySeconds }
      : { kind: 'hold', hold: 'debounce', delaySeconds };
  }
  if (flow.throttle && keys.throttle !== null) {
    const { limit, period_seconds: period } = flow.throttle;
    await lockFlowKey(m, workspaceId, 'throttle', keys.throttle);
    const plan = await throttlePlan(m, workspaceId, keys.throttle, limit, period);
    if (plan.due_now && !plan.waiting) return { kind: 'start' };
    return { kind: 'hold', hold: 'throttle', startAt: plan.start_at };
  }
  return { kind: 'start' };
}

/**
 * The timer's step: under the run's key lock, starts the key's held runs that may start now, oldest
 * dispatch first (their held starts enqueued in this transaction): a throttle's while its last period
 * has room (counted on actual starts, so a late timer never lets a period hold more), a debounce's
 * once its deadline has passed. Answers how long until this run's own start may come (null once it
 * is no longer held: started, cancelled, or never held).
 */
export async function releaseDue(
  m: EntityManager,
  executionId: string,
): Promise<{ waitMs: number | null; released: string[] }> {
  const before = await flowHeldRun(m, executionId);
  if (!before?.held || !before.flow_hold) return { waitMs: null, released: [] };
  const { workspace_id: workspaceId, flow_hold: hold } = before;
  const key = hold === 'throttle' ? before.throttle_key : before.debounce_key;
  if (key === null || hold === 'priority') return { waitMs: null, released: [] };
  await lockFlowKey(m, workspaceId, hold, key);
  const released: string[] = [];
  // On to the priority gate (priority-gate.ts), which starts it in this transaction when the workspace has room.
  const release = async (run: { id: string }) => {
    await passToGate(m, workspaceId, run.id, FLOW_RELEASED);
    released.push(run.id);
  };
  let roomMs: number | null = null;
  if (hold === 'throttle') {
    for (;;) {
      const next = await oldestThrottled(m, workspaceId, key);
      if (!next) break;
      roomMs = await throttleRoomMs(m, workspaceId, key, next.throttle_limit, next.throttle_period_seconds);
      if (roomMs !== null) break;
      await release(next);
    }
  } else {
    for (const run of await dueDebounced(m, workspaceId, key)) await release(run);
  }
  const after = await flowHeldRun(m, executionId);
  if (!after?.held) return { waitMs: null, released };
  return { waitMs: Math.max(after.wait_ms, roomMs ?? 0, 1), released };
}

/** A dispatch's flow columns (`flow-repository.ts`): its keys, and what holds it until when. */
function flowColumns(keys: FlowKeys, flowOf: RunFlow, flow: FlowAdmission, held: RunDispatched | undefined) {
  const hold = flow.kind === 'hold' ? flow.hold : null;
  return {
    throttleKey: keys.throttle,
    throttle: keys.throttle === null ? null : (flowOf.throttle ?? null),
    rateLimitKey: keys.rateLimit,
    debounceKey: keys.debounce,
    hold,
    // A throttled run's planned start; one that starts now counts against its period from now.
    startAt: flow.kind === 'hold' && flow.hold === 'throttle' ? flow.startAt : null,
    delaySeconds: flow.kind === 'hold' && flow.hold === 'debounce' ? flow.delaySeconds : keys.throttle ? 0 : null,
    held,
  };
}

/** A dispatch's flow: its keys, and what its admission decided. */
export interface DispatchFlow {
  keys: FlowKeys;
  flow: RunFlow;
  admission: FlowAdmission;
}

/** The dispatch's keys evaluated, and its admission under their locks; undefined without `flow`. */
export async function admitDispatch(
  m: EntityManager,
  workspaceId: string,
  flow: RunFlow | undefined,
  input: Record<string, unknown>,
  filters: Pick<FilterPool, 'evaluate'> | undefined,
): Promise<DispatchFlow | undefined> {
  if (!flow) return undefined;
  const keys = await resolveFlowKeys(flow, input, filters, workspaceId);
  return { keys, flow, admission: await admitFlow(m, workspaceId, flow, keys) };
}

/** A new run's flow columns; a held one (`held`, its start) gets the event that starts its timer. */
export async function recordDispatchFlow(
  m: EntityManager,
  workspaceId: string,
  executionId: string,
  dispatch: DispatchFlow,
  held: RunDispatched | undefined,
): Promise<void> {
  await recordFlow(m, executionId, flowColumns(dispatch.keys, dispatch.flow, dispatch.admission, held));
  if (!held) return;
  await enqueueEvent(m, runFlowHeld, { workspaceId, aggregateId: executionId, payload: { execution_id: executionId } });
}

/** A dispatch that collapsed into the waiting debounced run: the run takes its input, steps and a later start. */
export async function collapseDispatch(
  m: EntityManager,
  workspaceId: string,
  body: DispatchRunRequest,
  payload: RunDispatched,
  flow: Extract<FlowAdmission, { kind: 'collapse' }>,
): Promise<DispatchRunResponse> {
  const { id, run_id: runId } = flow.into;
  await collapseInto(m, id, body.input, payload, flow.delaySeconds);
  const planned = body.agent === 'playbook' ? body.input.steps : [];
  await insertSteps(
    m,
    workspaceId,
    id,
    planned.map((step) => ({ tool: step.tool, input: step.input, requiresApproval: step.requires_approval })),
  );
  return {
    execution_id: id,
    run_id: runId,
    status: 'QUEUED',
    was_duplicate: false,
    queued_reason: 'debounced',
    debounced: true,
  };
}

/** The timer workflow's half (`workflows/run-flow.ts`): one release, then the outbox kicked for what it started. */
export function createFlowReleaser(deps: { uow: UnitOfWork; outbox: Pick<OutboxRelay, 'kick'> }) {
  return {
    async release(workspaceId: string, executionId: string): Promise<{ waitMs: number | null }> {
      const { waitMs, released } = await deps.uow({ workspaceId }, (m) => releaseDue(m, executionId));
      if (released.length > 0) deps.outbox.kick(workspaceId);
      return { waitMs };
    },
  };
}

export type FlowReleaser = ReturnType<typeof createFlowReleaser>;
