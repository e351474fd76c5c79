// The run's own row (`run_executions`): its dispatch, status transitions, finish and cancel, and
// the lock every writer of a run takes first (`lockExecution`). Its steps are `step-repository.ts`,
// its audit chain `audit-repository.ts`; all of them guard on `UNFINISHED`, the one condition that no
// write leaves a finished run.
import type { EntityManager } from 'typeorm';
import * as approvalsRepo from '../approvals/repository';
import { RUN_UNFINISHED } from '../approvals/repository';
import { affectedRows, queryFirst, queryRows } from '../platform/db/query';
import { NotFoundError } from '../platform/errors';
import { LIMITS } from '../rules/limits';
import type { FinishedRunRow } from './callbacks';
import { callbackRunFinished } from './callbacks';
import { finishingWithKey } from './concurrency';
import type { RunError, RunPrincipal, RunStatus } from './entities';
import { RunExecution, RunStep } from './entities';
import { recordRunEvent } from './event-repository';
import { BACKLOG_COUNTED } from './fair-share';
import type { GateState } from './priority-gate';
import { oweGate } from './priority-gate';
import { GATE_STATE_SQL } from './priority-gate-repository';
import type { WokenWaiter } from './waitpoint-events';
import { onRunFinished } from './waitpoint-events';

const executions = (m: EntityManager) => m.getRepository(RunExecution);
const steps = (m: EntityManager) => m.getRepository(RunStep);

// A transition never leaves a finished run: every status write carries this condition (an approval's
// decision too, which is why it is declared in src/approvals, below runs).
export const UNFINISHED = RUN_UNFINISHED;

export interface NewExecution {
  workspaceId: string;
  userId: string;
  agent: 'playbook' | 'llm';
  input: Record<string, unknown>;
  principal: RunPrincipal;
  idempotencyKey: string | null;
  requestHash: string;
  scheduleId?: string | null;
  /** A child run's parent, root and depth (`children.ts`); absent for a run no step started. */
  lineage?: { parentId: string; rootId: string; depth: number };
  /** Its `flow.priority` (`flow-schemas.ts`'s priorityOf); the default when absent. */
  priority?: number;
}

/**
 * Issue 41, a run keeps the connector versions it started with: each of the workspace's connectors'
 * version as the run is dispatched (`$1` its workspace), or a child run's parent's (`$9`), so a tree
 * of runs sees one set of tools. Read by `connector-pins.ts`.
 */
const PINNED_CONNECTORS = `CASE WHEN $9::uuid IS NULL
    THEN (SELECT coalesce(jsonb_object_agg(c.id, jsonb_build_object('name', c.name, 'version', c.version)), '{}')
          FROM connectors c WHERE c.workspace_id = $1)
    ELSE (SELECT p.connector_versions FROM run_executions p WHERE p.id = $9::uuid) END`;

/**
 * Inserts the execution, or nothing when its idempotency key is taken (raw SQL for the partial
 * unique index's ON CONFLICT, which waits for a concurrent holder to commit). Null when taken. With
 * the priority gate's state of the workspace before it (`priority-gate.ts`), and `waiting`: how many of
 * the workspace's runs were QUEUED before it (its fair share, `fair-share.ts`, counted as far as it
 * matters), in the same statement.
 */
export async function insertExecution(
  m: EntityManager,
  row: NewExecution,
): Promise<{ id: string; runId: string; gate: GateState; waiting: number } | null> {
  const inserted = await queryFirst<{ id: string; run_id: string; waiting: number } & GateState>(
    m,
    `INSERT INTO run_executions
       (workspace_id, user_id, agent, input, principal, idempotency_key, request_hash, schedule_id,
        parent_execution_id, root_execution_id, depth, priority, connector_versions)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, ${PINNED_CONNECTORS})
     ON CONFLICT (workspace_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
     RETURNING id, run_id, ${GATE_STATE_SQL},
       (SELECT count(*)::int FROM (SELECT 1 FROM run_executions WHERE workspace_id = $1 AND status = 'QUEUED'
         LIMIT ${BACKLOG_COUNTED}) q) AS waiting`,
    [
      row.workspaceId,
      row.userId,
      row.agent,
      JSON.stringify(row.input),
      JSON.stringify(row.principal),
      row.idempotencyKey,
      row.requestHash,
      row.scheduleId ?? null,
      row.lineage?.parentId ?? null,
      row.lineage?.rootId ?? null,
      row.lineage?.depth ?? 0,
      row.priority ?? LIMITS.runs.priority.default,
    ],
  );
  if (!inserted) return null;
  const { gate_in_flight, gate_waiting, waiting } = inserted;
  return { id: inserted.id, runId: inserted.run_id, gate: { gate_in_flight, gate_waiting }, waiting };
}

export const findExecutionByKey = (m: EntityManager, idempotencyKey: string) =>
  executions(m).findOneBy({ idempotencyKey });

export const findExecution = (m: EntityManager, id: string) => executions(m).findOneBy({ id });

/**
 * The execution, its row share-locked (FOR SHARE) to the end of the transaction: a finish in progress is
 * waited for and seen, and one that starts later waits for this transaction's commit.
 */
export const findExecutionShared = (m: EntityManager, id: string) =>
  executions(m).findOne({ where: { id }, lock: { mode: 'pessimistic_read' } });

/** The execution, or the 404 an unknown run (or another workspace's) answers with. */
export async function mustFindExecution(m: EntityManager, id: string): Promise<RunExecution> {
  const run = await findExecution(m, id);
  if (!run) throw new NotFoundError({ error: 'run_not_found', execution_id: id });
  return run;
}

/**
 * Moves an unfinished run to `status` and records its `run.status` event; false when it had
 * finished (a cancel won the race) or was in `status` already (no event then).
 */
export async function setStatus(m: EntityManager, id: string, status: RunStatus, from?: RunStatus): Promise<boolean> {
  const moved =
    (await affectedRows(
      m,
      `UPDATE run_executions SET status = $2, updated_at = now() WHERE id = $1 AND ${UNFINISHED}
       AND ($3::text IS NULL OR status = $3) AND status <> $2`,
      [id, status, from ?? null],
    )) > 0;
  if (moved) await recordRunEvent(m, id, { type: 'run.status', data: { status } });
  return moved;
}

/**
 * QUEUED → RUNNING, the run's begin: it leaves the priority gate's flight, so its transaction owes the
 * gate a release at its end (`priority-gate.ts`), whose runs let go the caller's outbox kick delivers.
 * Undefined when the run was not QUEUED.
 */
export async function beginExecution(m: EntityManager, workspaceId: string, id: string) {
  return (await setStatus(m, id, 'RUNNING', 'QUEUED')) ? oweGate(m, workspaceId) : undefined;
}

/** The `run.finished` event of a run that has just ended, from its row as it now reads. */
export async function recordFinished(m: EntityManager, id: string): Promise<void> {
  const run = await mustFindExecution(m, id);
  await recordRunEvent(m, id, {
    type: 'run.finished',
    data: {
      status: run.status,
      output: run.output ?? null,
      error: run.error ?? null,
      credits_charged: run.creditsCharged,
    },
  });
}

/** A finish that ended the run: the runs whose `runs.wait` on it it completed (`WokenWaiter`). */
export interface FinishedRun {
  woken: WokenWaiter[];
}

/** What the finishing statements return: the row a `run.finished` callback reports. */
const FINISHED_ROW = `RETURNING id, workspace_id, agent, status, error, output, credits_charged, finished_at`;

/**
 * Ends an unfinished run with its output or error and the sum of its steps' charges, records its
 * `run.status` and `run.finished` events (one statement for both) and queues its `run.finished`
 * callbacks; a run with a concurrency key hands its slot on in the same transaction (`concurrency.ts`).
 * Null when the run had finished already; else the `runs.wait`s its finish completed (their runs to wake).
 */
export async function finishExecution(
  m: EntityManager,
  id: string,
  outcome: { status: 'SUCCEEDED' | 'FAILED'; output: unknown; error: RunError | null },
): Promise<FinishedRun | null> {
  let woken: WokenWaiter[] = [];
  const { finished } = await finishingWithKey(m, id, async () => {
    const ended = await queryFirst<FinishedRunRow>(
      m,
      `UPDATE run_executions SET status = $2, output = $3, error = $4, updated_at = now(), finished_at = now(),
         credits_charged = (SELECT coalesce(sum(credits_charged), 0) FROM run_steps WHERE execution_id = $1)
       WHERE id = $1 AND ${UNFINISHED} ${FINISHED_ROW}`,
      [
        id,
        outcome.status,
        JSON.stringify(outcome.output ?? null),
        outcome.error ? JSON.stringify(outcome.error) : null,
      ],
    );
    if (!ended) return false;
    await recordRunEvent(
      m,
      id,
      { type: 'run.status', data: { status: outcome.status } },
      {
        type: 'run.finished',
        data: {
          status: outcome.status,
          output: outcome.output ?? null,
          error: outcome.error,
          credits_charged: Number(ended.credits_charged),
        },
      },
    );
    await callbackRunFinished(m, ended);
    woken = await onRunFinished(m, ended);
    return true;
  });
  return finished ? { woken } : null;
}

/**
 * Cancels an unfinished run, its pending approvals and its steps not yet started, records its
 * `run.status` event and queues its callbacks; the caller records `run.finished` (`recordFinished`)
 * once the cancelled approvals' own events are written, so the stream's last event stays the last.
 * Its concurrency slot goes to the oldest waiting run unless `releaseSlot` is false (a
 * `cancel_previous` dispatch, which takes the slot itself).
 */
export async function cancelExecution(m: EntityManager, id: string, releaseSlot = true): Promise<boolean> {
  let cancelled: FinishedRunRow | undefined;
  await finishingWithKey(
    m,
    id,
    async () => {
      cancelled = await queryFirst<FinishedRunRow>(
        m,
        `UPDATE run_executions SET status = 'CANCELLED', updated_at = now(), finished_at = now(), held_start = NULL,
           credits_charged = (SELECT coalesce(sum(credits_charged), 0) FROM run_steps WHERE execution_id = $1)
         WHERE id = $1 AND ${UNFINISHED} ${FINISHED_ROW}`,
        [id],
      );
      return cancelled !== undefined;
    },
    releaseSlot,
  );
  if (!cancelled) return false;
  await approvalsRepo.cancelPendingApprovals(m, id);
  await steps(m).update({ executionId: id, status: 'PENDING' }, { status: 'SKIPPED' });
  await recordRunEvent(m, id, { type: 'run.status', data: { status: 'CANCELLED' } });
  await callbackRunFinished(m, cancelled);
  await onRunFinished(m, cancelled);
  return true;
}

/**
 * A step that lands after its run finished (a cancel while it ran): the run's total takes its
 * charge, so what the run reports is what its steps cost. An unfinished run is summed when it ends.
 * An assignment of the run row's update that records the step's event (recordRunEventSetting), so
 * it costs no statement of its own.
 */
export const SETTLE_FINISHED_CHARGES = `credits_charged = CASE WHEN ${UNFINISHED} THEN credits_charged
  ELSE (SELECT coalesce(sum(credits_charged), 0) FROM run_steps WHERE execution_id = run_executions.id) END`;

/**
 * AWAITING_APPROVAL (or already RUNNING: a retried or resumed transition) → RUNNING; false when the
 * run has finished. Raw SQL: the status condition, and the status before (locked), so only a real
 * change records its `run.status` event.
 */
export async function resumeExecution(m: EntityManager, id: string): Promise<boolean> {
  const row = await queryFirst<{ before: RunStatus }>(
    m,
    `UPDATE run_executions e SET status = 'RUNNING', updated_at = now()
     FROM (SELECT id, status FROM run_executions WHERE id = $1 FOR NO KEY UPDATE) b
     WHERE e.id = b.id AND b.status IN ('AWAITING_APPROVAL', 'RUNNING')
     RETURNING b.status AS before`,
    [id],
  );
  if (row?.before === 'AWAITING_APPROVAL') {
    await recordRunEvent(m, id, { type: 'run.status', data: { status: 'RUNNING' } });
  }
  return row !== undefined;
}

/** A run whose row says it is still going: what the reconciler needs to check and restart it. */
export interface UnfinishedRun {
  id: string;
  status: RunStatus;
  agent: 'playbook' | 'llm';
  goal: string | null;
  step_count: number;
  tags: string[];
  priority: number;
}

/**
 * The scope's runs in QUEUED, RUNNING or AWAITING_APPROVAL not touched for `minAgeSeconds` (younger
 * ones belong to the API's start and the outbox), oldest first. Raw SQL: ages on the database's clock.
 */
export const unfinishedRuns = (m: EntityManager, minAgeSeconds: number, limit: number) =>
  queryRows<UnfinishedRun>(
    m,
    `SELECT e.id, e.status, e.agent, e.input->>'goal' AS goal, e.tags, e.priority,
       (SELECT count(*)::int FROM run_steps s WHERE s.execution_id = e.id) AS step_count
     FROM run_executions e
     WHERE e.status IN ('QUEUED', 'RUNNING', 'AWAITING_APPROVAL', 'WAITING') AND e.held_start IS NULL
       AND e.updated_at <= now() - make_interval(secs => $1)
     ORDER BY e.updated_at LIMIT $2`,
    [minAgeSeconds, limit],
  );

/**
 * Newest first, keyset-paged on (created_at, id): raw SQL for the row comparison, which the query
 * builder cannot say.
 */
export const listExecutions = (
  m: EntityManager,
  query: {
    status?: RunStatus;
    agent?: string;
    tag?: string[];
    schedule_id?: string;
    parent?: string;
    limit: number;
    after?: { createdAt: string; id: string };
  },
) =>
  // created_at as text keeps its microseconds, which a JS Date would drop from the cursor.
  queryRows<{ id: string; created_at_text: string }>(
    m,
    `SELECT id, created_at::text AS created_at_text FROM run_executions
     WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR agent = $2)
       AND ($3::timestamptz IS NULL OR (created_at, id) < ($3::timestamptz, $4::uuid))
       AND ($6::text[] IS NULL OR tags @> $6::text[])
       AND ($7::uuid IS NULL OR schedule_id = $7)
       AND ($8::uuid IS NULL OR parent_execution_id = $8)
     ORDER BY created_at DESC, id DESC LIMIT $5`,
    [
      query.status ?? null,
      query.agent ?? null,
      query.after?.createdAt ?? null,
      query.after?.id ?? null,
      query.limit,
      query.tag?.length ? query.tag : null,
      query.schedule_id ?? null,
      query.parent ?? null,
    ],
  );

export const executionsByIds = (m: EntityManager, ids: string[]) =>
  ids.length === 0 ? Promise.resolve([]) : executions(m).find({ where: ids.map((id) => ({ id })) });

// Raw SQL: a plain row lock that lets the step and approval foreign keys through (FOR NO KEY UPDATE).
export const lockExecution = (m: EntityManager, executionId: string) =>
  queryRows(m, `SELECT id FROM run_executions WHERE id = $1 FOR NO KEY UPDATE`, [executionId]);
