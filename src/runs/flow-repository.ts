import type { EntityManager } from 'typeorm';
import { queryFirst, queryRows } from '../platform/db/query';
import type { RunDispatched } from './events';

// The SQL of flow control on runs (issue 43 item 2; the rules are `flow.ts`): each knob's key lock,
// the rate limit's window, the throttle's planned starts, the debounced run that waits, and the
// held starts a timer releases.

export type FlowKnob = 'throttle' | 'rate_limit' | 'debounce';

/** Serialises every decision about one (workspace, knob, key) until the transaction ends. */
export const lockFlowKey = (m: EntityManager, workspaceId: string, knob: FlowKnob, key: string) =>
  queryFirst(m, `SELECT pg_advisory_xact_lock(hashtextextended('run-flow:' || $1 || ':' || $2 || ':' || $3, 0))`, [
    knob,
    workspaceId,
    key,
  ]);

/**
 * When the rate limit's window has room again: null while fewer than `limit` runs with the key were
 * dispatched in the last `period` seconds, else the seconds until the oldest of the last `limit` leaves it.
 */
export async function rateLimitWait(
  m: EntityManager,
  workspaceId: string,
  key: string,
  limit: number,
  periodSeconds: number,
): Promise<number | null> {
  const row = await queryFirst<{ wait: number }>(
    m,
    `SELECT greatest(1, ceil(extract(epoch FROM created_at + make_interval(secs => $4) - now())))::int AS wait
       FROM run_executions
      WHERE workspace_id = $1 AND rate_limit_key = $2 AND created_at > now() - make_interval(secs => $4)
      ORDER BY created_at DESC OFFSET $3 - 1 LIMIT 1`,
    [workspaceId, key, limit, periodSeconds],
  );
  return row?.wait ?? null;
}

// A throttle key's starts: its runs that started (`flow_hold` cleared, or handed to the priority gate;
// `flow_start_at` when), and with `planned` those that wait too (at their planned start); not a run
// cancelled while it waited for its throttle.
const STARTED = `(flow_hold IS NULL OR flow_hold = 'priority')`;
const PLANNED = `(${STARTED} OR (held_start IS NOT NULL AND status = 'QUEUED'))`;

/**
 * A throttled dispatch's start: one period after the `limit`-th latest start of the key, planned
 * ones included (now when the last period holds fewer), so no period ever holds more than `limit`
 * starts; and whether runs of the key still wait (then this one waits behind them, whatever its time).
 */
export const throttlePlan = (
  m: EntityManager,
  workspaceId: string,
  key: string,
  limit: number,
  periodSeconds: number,
) =>
  queryFirst<{ start_at: Date; due_now: boolean; waiting: boolean }>(
    m,
    `WITH planned AS (
       SELECT greatest(now(), coalesce((
         SELECT flow_start_at + make_interval(secs => $4) FROM run_executions
          WHERE workspace_id = $1 AND throttle_key = $2 AND flow_start_at IS NOT NULL AND ${PLANNED}
          ORDER BY flow_start_at DESC OFFSET $3 - 1 LIMIT 1), now())) AS start_at)
     SELECT start_at, start_at <= now() AS due_now,
            EXISTS (SELECT 1 FROM run_executions WHERE workspace_id = $1 AND throttle_key = $2
                      AND flow_hold = 'throttle' AND held_start IS NOT NULL AND status = 'QUEUED') AS waiting
       FROM planned`,
    [workspaceId, key, limit, periodSeconds],
  ).then((row) => row!);

/** How long until the throttle key's last period has room for another start (null: it has room now). */
export async function throttleRoomMs(
  m: EntityManager,
  workspaceId: string,
  key: string,
  limit: number,
  periodSeconds: number,
): Promise<number | null> {
  const row = await queryFirst<{ wait_ms: number }>(
    m,
    `SELECT greatest(1, ceil(extract(epoch FROM flow_start_at + make_interval(secs => $4) - now()) * 1000))::int
            AS wait_ms
       FROM run_executions
      WHERE workspace_id = $1 AND throttle_key = $2 AND ${STARTED}
        AND flow_start_at > now() - make_interval(secs => $4)
      ORDER BY flow_start_at DESC OFFSET $3 - 1 LIMIT 1`,
    [workspaceId, key, limit, periodSeconds],
  );
  return row?.wait_ms ?? null;
}

/** The throttle key's oldest waiting run, with its limit and period, locked. */
export const oldestThrottled = (m: EntityManager, workspaceId: string, key: string) =>
  queryFirst<{ id: string; throttle_limit: number; throttle_period_seconds: number }>(
    m,
    `SELECT id, throttle_limit, throttle_period_seconds FROM run_executions
      WHERE workspace_id = $1 AND throttle_key = $2 AND flow_hold = 'throttle' AND status = 'QUEUED'
        AND held_start IS NOT NULL
      ORDER BY dispatch_seq LIMIT 1 FOR UPDATE`,
    [workspaceId, key],
  );

/** What a held run's release sets besides the gate's hold (priority-gate.ts): a throttled one counts from now. */
export const FLOW_RELEASED = `flow_start_at = CASE WHEN throttle_key IS NULL THEN flow_start_at ELSE now() END`;

/** The debounced run of the key that still waits to start, if any. */
export const waitingDebounced = (m: EntityManager, workspaceId: string, key: string) =>
  queryFirst<{ id: string; run_id: string }>(
    m,
    `SELECT id, run_id FROM run_executions
      WHERE workspace_id = $1 AND debounce_key = $2 AND status = 'QUEUED' AND held_start IS NOT NULL
        AND flow_hold = 'debounce'
      ORDER BY dispatch_seq DESC LIMIT 1 FOR UPDATE`,
    [workspaceId, key],
  );

/** A dispatch's flow columns; a held run keeps the event its start will enqueue, and when it starts. */
export async function recordFlow(
  m: EntityManager,
  executionId: string,
  flow: {
    throttleKey: string | null;
    throttle: { limit: number; period_seconds: number } | null;
    rateLimitKey: string | null;
    debounceKey: string | null;
    hold: 'throttle' | 'debounce' | null;
    /** A throttled run's planned start, a debounced run's delay from now. */
    startAt: Date | null;
    delaySeconds: number | null;
    held?: RunDispatched;
  },
): Promise<void> {
  await queryRows(
    m,
    `UPDATE run_executions SET throttle_key = $2, rate_limit_key = $3, debounce_key = $4, flow_hold = $5,
       flow_start_at = CASE WHEN $7::int IS NULL THEN $6::timestamptz ELSE now() + make_interval(secs => $7) END,
       held_start = coalesce($8::jsonb, held_start), throttle_limit = $9, throttle_period_seconds = $10
     WHERE id = $1`,
    [
      executionId,
      flow.throttleKey,
      flow.rateLimitKey,
      flow.debounceKey,
      flow.hold,
      flow.startAt,
      flow.delaySeconds,
      flow.held ? JSON.stringify(flow.held) : null,
      flow.throttle?.limit ?? null,
      flow.throttle?.period_seconds ?? null,
    ],
  );
}

/** A later dispatch collapses into the waiting debounced run: its input and start, and a later deadline. */
export async function collapseInto(
  m: EntityManager,
  executionId: string,
  input: Record<string, unknown>,
  held: RunDispatched,
  delaySeconds: number,
): Promise<void> {
  await queryRows(
    m,
    `UPDATE run_executions SET input = $2, held_start = $3, flow_start_at = now() + make_interval(secs => $4),
       updated_at = now() WHERE id = $1`,
    [executionId, JSON.stringify(input), JSON.stringify(held), delaySeconds],
  );
  await queryRows(m, `DELETE FROM run_steps WHERE execution_id = $1`, [executionId]);
}

/** A held run as its timer reads it. */
export const flowHeldRun = (m: EntityManager, executionId: string) =>
  queryFirst<{
    workspace_id: string;
    flow_hold: 'throttle' | 'debounce' | 'priority' | null;
    throttle_key: string | null;
    throttle_limit: number | null;
    throttle_period_seconds: number | null;
    debounce_key: string | null;
    held: boolean;
    wait_ms: number;
  }>(
    m,
    `SELECT workspace_id, flow_hold, throttle_key, throttle_limit, throttle_period_seconds, debounce_key,
            (status = 'QUEUED' AND held_start IS NOT NULL AND flow_hold IN ('throttle', 'debounce')) AS held,
            greatest(0, ceil(extract(epoch FROM flow_start_at - now()) * 1000))::int AS wait_ms
       FROM run_executions WHERE id = $1`,
    [executionId],
  );

/** The debounced runs of the key whose time has come, in dispatch order, locked. */
export const dueDebounced = (m: EntityManager, workspaceId: string, key: string) =>
  queryRows<{ id: string }>(
    m,
    `SELECT id FROM run_executions
      WHERE workspace_id = $1 AND debounce_key = $2 AND flow_hold = 'debounce' AND status = 'QUEUED'
        AND held_start IS NOT NULL AND flow_start_at <= now()
      ORDER BY dispatch_seq FOR UPDATE`,
    [workspaceId, key],
  );
