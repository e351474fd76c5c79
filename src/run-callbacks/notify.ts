import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { enqueueEvent } from '../platform/outbox/relay';
import type { CallbackEventType } from './events';
import { runCallbackQueued } from './events';
import { insertDeliveries } from './repository';

/** What a callback's body carries beyond its envelope: the run and, by event, its status and more. */
export interface CallbackData {
  execution_id: string;
  status: string;
  [field: string]: unknown;
}

/**
 * The one writer of run callbacks, called in THE transaction that made the event happen (a run
 * finishing, an approval requested): a delivery per subscription that asked for it, each with the
 * exact body it will sign, and an outbox event that starts its delivery workflow once this commits.
 * `key` names the event so that a retried writer queues it once (`run.finished:<execution_id>`).
 * Costs one indexed statement when nothing subscribes.
 */
export async function notifyRunCallbacks(
  m: EntityManager,
  event: { workspaceId: string; executionId: string; event: CallbackEventType; key: string; data: CallbackData },
): Promise<void> {
  const eventId = randomUUID();
  const body = JSON.stringify({
    id: eventId,
    type: event.event,
    created_at: new Date().toISOString(),
    data: event.data,
  });
  const queued = await insertDeliveries(m, {
    executionId: event.executionId,
    eventId,
    key: event.key,
    type: event.event,
    body,
  });
  for (const delivery of queued) {
    await enqueueEvent(m, runCallbackQueued, {
      workspaceId: event.workspaceId,
      aggregateId: delivery.id,
      payload: { delivery_id: delivery.id, series: 0 },
    });
  }
}
