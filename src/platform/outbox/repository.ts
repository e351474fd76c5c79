import type { EntityManager } from 'typeorm';
import { queryRows } from '../db/query';
import { OutboxEvent } from './entities';

/** One undelivered event as handlers see it (the row's columns, as the handlers were written for). */
export interface OutboxMessage {
  id: string;
  workspace_id: string;
  event_type: string;
  aggregate_id: string;
  payload: Record<string, unknown>;
}

const outbox = (m: EntityManager) => m.getRepository(OutboxEvent);

export async function insertOutboxEvent(
  m: EntityManager,
  event: { workspaceId: string; eventType: string; aggregateId: string; payload?: Record<string, unknown> },
): Promise<void> {
  await outbox(m).insert({
    workspaceId: event.workspaceId,
    eventType: event.eventType,
    aggregateId: event.aggregateId,
    payload: event.payload ?? {},
  });
}

/** The scope's undelivered events older than `minAgeSeconds`, oldest first. Raw SQL: ages on the database's clock. */
export const undeliveredEvents = (m: EntityManager, input: { minAgeSeconds: number; limit: number }) =>
  queryRows<OutboxMessage>(
    m,
    `SELECT id::text, workspace_id, event_type, aggregate_id, payload FROM outbox
     WHERE dispatched_at IS NULL AND created_at <= now() - make_interval(secs => $1)
     ORDER BY id LIMIT $2`,
    [input.minAgeSeconds, input.limit],
  );

export async function markDelivered(m: EntityManager, id: string): Promise<void> {
  await outbox(m).update(id, { dispatchedAt: () => 'now()', attempts: () => 'attempts + 1', lastError: null });
}

export async function markFailed(m: EntityManager, id: string, error: string): Promise<void> {
  await outbox(m).update(id, { attempts: () => 'attempts + 1', lastError: error.slice(0, 500) });
}

/**
 * Workspaces with undelivered events older than `minAgeSeconds`, across every workspace: the
 * definer function `weft_outbox_pending_workspaces` tells only which workspaces, past RLS.
 */
export async function workspacesWithUndeliveredEvents(m: EntityManager, minAgeSeconds: number): Promise<string[]> {
  const rows = await queryRows<{ workspace_id: string }>(
    m,
    `SELECT weft_outbox_pending_workspaces(make_interval(secs => $1)) AS workspace_id`,
    [minAgeSeconds],
  );
  return rows.map((row) => row.workspace_id);
}
