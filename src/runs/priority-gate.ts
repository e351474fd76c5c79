import type { EntityManager } from 'typeorm';
import { beforeCommit } from '../platform/db/unit-of-work';
import { enqueueEvent } from '../platform/outbox/relay';
import { LIMITS } from '../rules/limits';
import { runDispatched } from './events';
import { gateWaiting, handToGate, heldToRelease, lockGate, releaseHeld } from './priority-gate-repository';

/**
 * The priority gate (issue 43 item 2): `flow.priority` orders a workspace's runs among themselves only.
 * Temporal orders a task queue by priority key before fairness key, so the key would let one
 * workspace's priority-1 flood go ahead of every other workspace's runs; Weft sends none (starter.ts)
 * and orders by priority itself, before Temporal sees the runs. A workspace has at most
 * `LIMITS.runs.priority.inFlight` runs *in flight* (QUEUED with nothing held back: started, or about
 * to be by their `run.dispatched` event, their first step not yet begun); a dispatch beyond that is
 * held QUEUED (`flow_hold = 'priority'`, its start in `held_start`, as a throttled run waits), and
 * each run that leaves flight releases the held ones that fit, by priority then dispatch order,
 * enqueuing their starts in its own transaction. Temporal's fairness key shares the queue between
 * workspaces; the gate keeps a workspace's share in its own order.
 *
 * Nothing is ever stranded (held while the workspace has room), by one advisory lock per workspace,
 * which every transaction that holds a run or takes one out of flight takes after its own writes, at
 * its end (`beforeCommit`), to release under it what fits, counting the runs in flight then (each
 * statement sees every commit before it):
 * - a dispatch that finds the workspace full, or runs held, is held; one that finds it clearly free
 *   (under the cap, nothing held: the counts its insert returned) starts without the lock, which at
 *   worst lets concurrent dispatches exceed the cap by their number, and never holds anything;
 * - a run that leaves flight (begins: QUEUED → RUNNING; or is cancelled or finished while QUEUED),
 *   and a run another hold lets go (a concurrency key's slot, a throttle's or a debounce's time: it
 *   is handed to the gate, its start still held), owe the same release.
 * Of two such transactions, the one that takes the lock second counts after the first committed (the
 * lock is released at commit), so it sees the first one's held run, or no longer counts its run in
 * flight. The lock is the last one any transaction takes, and its holder waits for no row (`SKIP
 * LOCKED`) nor any other lock, so it cannot deadlock with the concurrency keys', the flow keys' or the
 * rows' locks taken before it. Every release happens in the transaction that made the room, so a crash
 * loses none; room is left unused only when a release skipped a held run locked by a cancel that then
 * rolled back, and the run reconciler's pass releases what a workspace has room for.
 */

const CAP = LIMITS.runs.priority.inFlight;

/** What the gate did for a transaction: the held runs it released (their events leave on an outbox kick). */
export interface GateRelease {
  released: string[];
}

/** Under the workspace's lock: releases its held runs while it has room, by priority then dispatch order. */
async function releaseRoom(m: EntityManager, workspaceId: string): Promise<string[]> {
  await lockGate(m, workspaceId);
  const next = await heldToRelease(m, workspaceId);
  for (const run of next) {
    await releaseHeld(m, run.id);
    await enqueueEvent(m, runDispatched, { workspaceId, aggregateId: run.id, payload: run.held_start });
  }
  return next.map((run) => run.id);
}

/** The gate's state as a dispatch's insert returns it (`GATE_STATE_SQL`): runs in flight (to the cap), any held. */
export interface GateState {
  gate_in_flight: number;
  gate_waiting: boolean;
}

/**
 * A new run that no other hold keeps back starts at once while its workspace has room and nothing
 * waits; else it is held (the caller keeps its start back, undefined here) and its transaction owes
 * the gate, which at its end lets go what fits, this run too when its priority comes first.
 */
export function holdAtGate(m: EntityManager, workspaceId: string, state: GateState): GateRelease | undefined {
  if (state.gate_in_flight < CAP && !state.gate_waiting) return undefined;
  return oweGate(m, workspaceId);
}

const owed = new WeakMap<EntityManager, Map<string, GateRelease>>();

/**
 * The transaction took a run of the workspace out of flight, or handed one to the gate: at its end
 * (after every other lock it takes) it releases what fits. The answer fills in at that end.
 */
export function oweGate(m: EntityManager, workspaceId: string): GateRelease {
  const debts = owed.get(m) ?? new Map<string, GateRelease>();
  owed.set(m, debts);
  const known = debts.get(workspaceId);
  if (known) return known;
  const debt: GateRelease = { released: [] };
  debts.set(workspaceId, debt);
  beforeCommit(m, `priority-gate:${workspaceId}`, async () => {
    debt.released = await releaseRoom(m, workspaceId);
    debts.delete(workspaceId);
  });
  return debt;
}

/** A run another hold let go (a concurrency slot, a throttle's or debounce's time) waits at the gate instead. */
export async function passToGate(m: EntityManager, workspaceId: string, executionId: string, also = '') {
  await handToGate(m, executionId, also);
  return oweGate(m, workspaceId);
}

/** The reconciler's fallback: a workspace's held runs that fit, should a release have been lost. */
export async function releaseStranded(m: EntityManager, workspaceId: string): Promise<string[]> {
  return (await gateWaiting(m, workspaceId)) ? releaseRoom(m, workspaceId) : [];
}
