import type { EntityManager } from 'typeorm';
import { ConflictError } from '../platform/errors';
import { activeRuns, concurrencyKeyOf, lockConcurrencyKey, oldestWaiting } from './concurrency-repository';
import type { RunConcurrency } from './control-schemas';
import { oweGate, passToGate } from './priority-gate';

/**
 * Concurrency keys (issue 26 part 4). A run dispatched with `concurrency: {key, limit, policy}` is
 * *active* from its dispatch until it finishes, unless it waits for a slot: then it is QUEUED with
 * its `run.dispatched` payload held back in `held_start`, and its workflow is not started. Every
 * decision about a key happens under one transaction-scoped advisory lock on (workspace, key):
 * a dispatch counts the active runs and admits, holds, refuses or cancels; a run that finishes or is
 * cancelled (however: its workflow, the API, the reconciler) takes the same lock *before* touching
 * its row (so the two orders never deadlock) and hands the freed slots to the oldest waiting runs,
 * which go on to the priority gate (`priority-gate.ts`) in the same transaction. Counting, never
 * remembering who holds what, is what keeps a cancelled waiting run from freeing a slot it did not hold.
 */

/** What a dispatch with a concurrency key does: start now, wait for a slot, or start after cancelling older runs. */
export type Admission = { kind: 'start'; cancel?: string[] } | { kind: 'hold' };

/**
 * Locks the key for the rest of the dispatch's transaction and decides. `reject` at the limit is a
 * 409 naming the active runs; `enqueue` waits while the limit is reached or earlier runs wait (so
 * the queue keeps dispatch order); `cancel_previous` names the oldest active runs to cancel so this
 * one fits (the caller cancels them without releasing their slots, which this run takes).
 */
export async function admit(m: EntityManager, workspaceId: string, control: RunConcurrency): Promise<Admission> {
  await lockConcurrencyKey(m, workspaceId, control.key);
  const active = await activeRuns(m, workspaceId, control.key);
  const full = active.length >= control.limit;
  if (control.policy === 'reject') {
    if (!full) return { kind: 'start' };
    throw new ConflictError({
      error: 'concurrency_limit',
      message: `${active.length} run(s) with concurrency key ${control.key} are active (limit ${control.limit})`,
      concurrency_key: control.key,
      execution_ids: active.map((run) => run.id),
    });
  }
  if (control.policy === 'enqueue') {
    if (full || (await oldestWaiting(m, workspaceId, control.key))) return { kind: 'hold' };
    return { kind: 'start' };
  }
  if (!full) return { kind: 'start' };
  return { kind: 'start', cancel: active.slice(0, active.length - control.limit + 1).map((run) => run.id) };
}

/**
 * Runs `finish` (a conditional update that ends the run) under its key's lock, taken first, then
 * hands the slots now free to the oldest waiting runs. Answers what `finish` did, and the ids of
 * the runs it let go (to the priority gate, whose releases the caller's outbox kick delivers). A run
 * that ends while QUEUED may have been in the gate's flight: the transaction owes the gate a release.
 */
export async function finishingWithKey(
  m: EntityManager,
  executionId: string,
  finish: () => Promise<boolean>,
  release = true,
): Promise<{ finished: boolean; released: string[] }> {
  const run = await concurrencyKeyOf(m, executionId);
  if (run?.concurrency_key) await lockConcurrencyKey(m, run.workspace_id, run.concurrency_key);
  const finished = await finish();
  // Read before the update, so stale at worst: QUEUED is never gone back to, and an extra release is harmless.
  if (finished && run?.status === 'QUEUED') oweGate(m, run.workspace_id);
  if (!run?.concurrency_key || !finished || !release) return { finished, released: [] };
  return { finished, released: await releaseSlots(m, run.workspace_id, run.concurrency_key) };
}

/** Under the key's lock: lets waiting runs go to the gate, oldest first, while the oldest one's limit has room. */
async function releaseSlots(m: EntityManager, workspaceId: string, key: string): Promise<string[]> {
  const released: string[] = [];
  for (;;) {
    const next = await oldestWaiting(m, workspaceId, key);
    if (!next) return released;
    const active = await activeRuns(m, workspaceId, key);
    if (active.length >= next.concurrency_limit) return released;
    await passToGate(m, workspaceId, next.id);
    released.push(next.id);
  }
}
