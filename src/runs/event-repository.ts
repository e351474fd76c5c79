import type { EntityManager } from 'typeorm';
import { queryRows } from '../platform/db/query';

/** The Postgres channel every event's commit notifies; its payload is `<workspace_id> <execution_id> <id>`. */
export const RUN_EVENTS_CHANNEL = 'weft_run_events';

export const RUN_EVENT_TYPES = [
  'run.status',
  'step.started',
  'step.completed',
  'step.failed',
  'approval.requested',
  'approval.resolved',
  'approval.voted',
  'approval.escalated',
  'decision.recorded',
  'run.finished',
  'waitpoint.created',
  'waitpoint.completed',
] as const;
export type RunEventType = (typeof RUN_EVENT_TYPES)[number];

/** A link of the run's audit chain (`run_audit`), by its position and hash. */
export interface AuditRef {
  seq: number;
  hash: string;
}

export interface RunEventInput {
  type: RunEventType;
  data: Record<string, unknown>;
  /** The chain link this event reports (a finished step, a resolved approval, a decision). */
  audit?: AuditRef;
}

/**
 * THE writer of the run event log (issue 26): appends `events`, in order, to the run's log in the
 * caller's transaction, so an event exists exactly when the change it reports commits. One
 * statement: it takes the next ids from the run row's `last_event_id` (under the run's row lock,
 * which every writer of the run takes anyway), inserts the rows, and `pg_notify`s the ids, which
 * Postgres delivers on commit (and never on rollback). An event without a chain link of its own
 * is stamped with the chain's head at that moment, so each event names a link of the verified chain.
 * Nothing is written for a run the transaction cannot see.
 */
export async function recordRunEvent(m: EntityManager, executionId: string, ...events: RunEventInput[]) {
  return recordRunEventSetting(m, executionId, '', events);
}

/**
 * recordRunEvent that also sets `assignments` (`column = expression, …`, in SQL over the run row as
 * it was) in the same update of the run row: one statement where a second update would be another
 * round trip (a step's completion settles a finished run's charges so).
 */
export async function recordRunEventSetting(
  m: EntityManager,
  executionId: string,
  assignments: string,
  events: RunEventInput[],
) {
  if (events.length === 0) return;
  const rows = events.map((event, at) => ({
    ord: at + 1,
    type: event.type,
    data: event.data,
    audit_seq: event.audit?.seq ?? null,
    audit_hash: event.audit?.hash ?? null,
  }));
  await queryRows(
    m,
    appendEventsSql(
      '$1',
      `e AS (SELECT * FROM jsonb_to_recordset($2::jsonb)
         AS e(ord int, type text, data jsonb, audit_seq int, audit_hash text))`,
      assignments,
    ),
    [executionId, JSON.stringify(rows)],
  );
}

/**
 * recordRunEvent's statement, for a caller that makes its events in the statement of the change
 * they report (one round trip, not two: the step's start). `events` defines a CTE `e` of rows
 * `(ord int, type text, data jsonb, audit_seq int, audit_hash text)`, ord counting from 1; the run
 * (`executionId`, a parameter reference) takes the next ids only when `e` has rows, and `assignments`
 * too if any. Earlier CTEs of the caller may come first in `events`; the result is the notify's row, if any.
 */
export function appendEventsSql(executionId: string, events: string, assignments = ''): string {
  const also = assignments ? `, ${assignments}` : '';
  return `WITH ${events}, run AS (
       UPDATE run_executions SET last_event_id = last_event_id + (SELECT count(*) FROM e)${also}
       WHERE id = ${executionId} AND EXISTS (SELECT 1 FROM e)
       RETURNING workspace_id, last_event_id, (SELECT count(*) FROM e) AS n
     ), head AS (
       SELECT seq, hash FROM run_audit WHERE execution_id = ${executionId} ORDER BY seq DESC LIMIT 1
     ), written AS (
       INSERT INTO run_events (workspace_id, execution_id, id, type, data, audit_seq, audit_hash, audit_own)
       SELECT run.workspace_id, ${executionId}, run.last_event_id - run.n + e.ord, e.type, e.data,
         coalesce(e.audit_seq, head.seq), coalesce(e.audit_hash, head.hash), e.audit_seq IS NOT NULL
       FROM run
       CROSS JOIN e
       LEFT JOIN head ON true
       RETURNING workspace_id, execution_id, id
     )
     SELECT pg_notify('${RUN_EVENTS_CHANNEL}', workspace_id || ' ' || execution_id || ' ' || max(id))
     FROM written GROUP BY workspace_id, execution_id`;
}
