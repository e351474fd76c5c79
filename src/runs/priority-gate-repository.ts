import type { EntityManager } from 'typeorm';
import { queryFirst, queryRows } from '../platform/db/query';
import { LIMITS } from '../rules/limits';
import { recordRunEventSetting } from './event-repository';
import type { RunDispatched } from './events';

// The SQL of the priority gate (issue 43 item 2; the rules are `priority-gate.ts`): its lock, the
// workspace's runs in flight (released to Temporal, not yet begun) and its held runs in release order.

const CAP = LIMITS.runs.priority.inFlight;

/** Serialises the gate's decisions about one workspace until the transaction ends. */
export const lockGate = (m: EntityManager, workspaceId: string) =>
  queryFirst(m, `SELECT pg_advisory_xact_lock(hashtextextended('run-priority-gate:' || $1, 0))`, [workspaceId]);

// In flight: started or about to be (its `run.dispatched` enqueued), its first step not yet begun.
const IN_FLIGHT = `status = 'QUEUED' AND held_start IS NULL`;
const HELD = `status = 'QUEUED' AND flow_hold = 'priority'`;

/**
 * The gate's state as columns over workspace `$1`, for a dispatch's insert to return (its own row is
 * not in the statement's snapshot): its runs in flight, counted up to the cap, and whether any is held.
 */
export const GATE_STATE_SQL = `(SELECT count(*)::int FROM (SELECT 1 FROM run_executions
    WHERE workspace_id = $1 AND ${IN_FLIGHT} LIMIT ${CAP}) f) AS gate_in_flight,
  EXISTS (SELECT 1 FROM run_executions WHERE workspace_id = $1 AND ${HELD}) AS gate_waiting`;

/** Whether the workspace has runs the gate holds (the reconciler's look before it takes the lock). */
export const gateWaiting = async (m: EntityManager, workspaceId: string) =>
  (await queryFirst(m, `SELECT 1 FROM run_executions WHERE workspace_id = $1 AND ${HELD} LIMIT 1`, [workspaceId])) !==
  undefined;

/**
 * Under the gate's lock: the held runs that fit in the room left (the cap less the runs in flight), by
 * priority then dispatch order, locked. A held run locked by another transaction is skipped, never
 * waited for: only a cancel locks one, and it is going away (its own release at its end follows).
 */
export const heldToRelease = (m: EntityManager, workspaceId: string) =>
  queryRows<{ id: string; held_start: RunDispatched }>(
    m,
    `SELECT id, held_start FROM run_executions WHERE workspace_id = $1 AND ${HELD}
      ORDER BY priority, dispatch_seq
      LIMIT greatest(0, $2 - (SELECT count(*) FROM (SELECT 1 FROM run_executions
                               WHERE workspace_id = $1 AND ${IN_FLIGHT} LIMIT $2) f))
      FOR UPDATE SKIP LOCKED`,
    [workspaceId, CAP],
  );

/** A held run is released: its start no longer held back, with its `run.status` event (one statement). */
export const releaseHeld = (m: EntityManager, executionId: string) =>
  recordRunEventSetting(m, executionId, `held_start = NULL, flow_hold = NULL, updated_at = now()`, [
    { type: 'run.status', data: { status: 'QUEUED', queued_reason: null } },
  ]);

/** A dispatch the gate holds: its start kept back in `held_start` (its `run.status` event says why). */
export const holdDispatch = (m: EntityManager, executionId: string, held: RunDispatched) =>
  queryRows(m, `UPDATE run_executions SET flow_hold = 'priority', held_start = $2 WHERE id = $1`, [
    executionId,
    JSON.stringify(held),
  ]);

/**
 * A run another hold kept back (a concurrency key's slot, a throttle's or a debounce's time) goes on
 * to the gate, its start still held: `also`, that hold's own columns to set in the same statement.
 */
export const handToGate = (m: EntityManager, executionId: string, also = '') =>
  recordRunEventSetting(m, executionId, `flow_hold = 'priority', updated_at = now()${also ? `, ${also}` : ''}`, [
    { type: 'run.status', data: { status: 'QUEUED', queued_reason: 'priority' } },
  ]);
