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
  'decision.recorded',
  'run.finished',
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
    `WITH run AS (
       UPDATE run_executions SET last_event_id = last_event_id + $2 WHERE id = $1
       RETURNING workspace_id, last_event_id
     ), head AS (
       SELECT seq, hash FROM run_audit WHERE execution_id = $1 ORDER BY seq DESC LIMIT 1
     ), written AS (
       INSERT INTO run_events (workspace_id, execution_id, id, type, data, audit_seq, audit_hash, audit_own)
       SELECT run.workspace_id, $1, run.last_event_id - $2 + e.ord, e.type, e.data,
         coalesce(e.audit_seq, head.seq), coalesce(e.audit_hash, head.hash), e.audit_seq IS NOT NULL
       FROM run
       CROSS JOIN jsonb_to_recordset($3::jsonb) AS e(ord int, type text, data jsonb, audit_seq int, audit_hash text)
       LEFT JOIN head ON true
       RETURNING workspace_id, execution_id, id
     )
     SELECT pg_notify('${RUN_EVENTS_CHANNEL}', workspace_id || ' ' || execution_id || ' ' || max(id))
     FROM written GROUP BY workspace_id, execution_id`,
    [executionId, events.length, JSON.stringify(rows)],
  );
}
