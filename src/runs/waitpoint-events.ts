// What a waitpoint's changes tell the run's event stream, its callbacks and its workflow (issue 40
// item 3), each written in the transaction of the change. Below execution-repository.ts, whose
// finishing statements call `onRunFinished`: a run that ends completes the waits on it.

import type { EntityManager } from 'typeorm';
import { z } from 'zod';
import { iso } from '../platform/dates';
import { affectedRows } from '../platform/db/query';
import { defineEvent } from '../platform/outbox/event';
import { enqueueEvent } from '../platform/outbox/relay';
import { notifyRunCallbacks } from '../run-callbacks/notify';
import type { FinishedRunRow } from './callbacks';
import { recordRunEvent } from './event-repository';
import type { WaitpointRow } from './waitpoint-repository';
import { settleWaitpoint, waitersOf } from './waitpoint-repository';

/** A waitpoint was settled: its run's workflow is signalled to re-read it (the outbox retries a lost signal). */
export const waitpointSettled = defineEvent(
  'waitpoint.settled',
  1,
  z.object({ waitpoint_id: z.string(), execution_id: z.string() }),
);

/** A run's outcome as a `runs.wait` reports it (`GET /v1/runs/{id}`'s status, output and error). */
export const runOutcome = (run: Omit<FinishedRunRow, 'finished_at'> & { finished_at: Date | string | null }) => ({
  execution_id: run.id,
  status: run.status,
  output: run.output ?? null,
  error: run.error ?? null,
  credits_charged: Number(run.credits_charged),
  finished_at: run.finished_at ? iso(run.finished_at) : null,
});

/** `waitpoint.created`, on the run's stream and to its callbacks; an event waitpoint's token is in both, once. */
export async function recordWaitpointCreated(m: EntityManager, wp: WaitpointRow, token: string | null) {
  const data = {
    waitpoint_id: wp.id,
    step_no: wp.step_no,
    kind: wp.kind,
    name: wp.name,
    expires_at: wp.expires_at ? iso(wp.expires_at) : null,
    awaited_execution_id: wp.awaited_execution_id,
    ...(token ? { token } : {}),
  };
  await recordRunEvent(m, wp.execution_id, { type: 'waitpoint.created', data });
  await notifyRunCallbacks(m, {
    workspaceId: wp.workspace_id,
    executionId: wp.execution_id,
    event: 'waitpoint.created',
    key: `waitpoint.created:${wp.id}`,
    data: { execution_id: wp.execution_id, status: 'WAITING', ...data },
  });
}

/**
 * `waitpoint.completed` (completed or timed out), and the signal that wakes its run; `wake: false` when
 * its own run settles it (the wait's read or expiry), which reads the outcome in the same call: a signal
 * then would only land later, and one landing while that workflow task completes the run fails the task.
 */
export async function recordWaitpointSettled(m: EntityManager, wp: WaitpointRow, wake = true) {
  const data = {
    waitpoint_id: wp.id,
    step_no: wp.step_no,
    kind: wp.kind,
    name: wp.name,
    status: wp.status,
    output: wp.output ?? null,
    completed_at: wp.completed_at ? iso(wp.completed_at) : null,
  };
  await recordRunEvent(m, wp.execution_id, { type: 'waitpoint.completed', data });
  await notifyRunCallbacks(m, {
    workspaceId: wp.workspace_id,
    executionId: wp.execution_id,
    event: 'waitpoint.completed',
    key: `waitpoint.completed:${wp.id}`,
    data: { execution_id: wp.execution_id, ...data },
  });
  if (!wake) return;
  await enqueueEvent(m, waitpointSettled, {
    workspaceId: wp.workspace_id,
    aggregateId: wp.id,
    payload: { waitpoint_id: wp.id, execution_id: wp.execution_id },
  });
}

/**
 * The waits of a run that has finished end with it: its waiting waitpoints are `cancelled` (their
 * tokens complete nothing, and their steps show them no more) and their steps, which no wait will settle
 * now, SKIPPED. `stepNo`: one step's.
 */
export const endWaits = (m: EntityManager, executionId: string, stepNo: number | null = null) =>
  affectedRows(
    m,
    `WITH ended AS (
       UPDATE waitpoints SET status = 'cancelled', completed_at = now()
       WHERE execution_id = $1 AND status = 'waiting' AND ($2::integer IS NULL OR step_no = $2)
       RETURNING step_no)
     UPDATE run_steps SET status = 'SKIPPED', finished_at = now(),
       output = CASE WHEN jsonb_typeof(output) = 'object' AND output ? 'token'
         THEN jsonb_set(output, '{token}', 'null') ELSE output END
     WHERE execution_id = $1 AND step_no IN (SELECT step_no FROM ended) AND status = 'RUNNING'`,
    [executionId, stepNo],
  );

/** A run waiting on a `runs.wait` waitpoint that a finish completed: the one to wake once it commits. */
export interface WokenWaiter {
  waitpointId: string;
  executionId: string;
}

/**
 * A run has just finished (in its finishing transaction): its own waits end with it (their tokens
 * no longer complete anything), and every `runs.wait` on it completes with its outcome. Answers the
 * waits it completed, whose runs the finisher may wake itself after the commit (wake.ts). A waiter not
 * yet WAITING (its step made the waitpoint, and its hold, which takes the run's lock held here, has not
 * committed) is not woken: its hold reads the completed waitpoint and settles the step itself, and a
 * signal would only land later, failing the workflow task that completes the run should it land then.
 */
export async function onRunFinished(m: EntityManager, run: FinishedRunRow): Promise<WokenWaiter[]> {
  await endWaits(m, run.id);
  const woken: WokenWaiter[] = [];
  for (const waiter of await waitersOf(m, run.id)) {
    const done = await settleWaitpoint(m, waiter.id, 'completed', runOutcome(run));
    if (!done) continue;
    const held = waiter.run_status === 'WAITING';
    await recordWaitpointSettled(m, done, held);
    if (held) woken.push({ waitpointId: done.id, executionId: done.execution_id });
  }
  return woken;
}
