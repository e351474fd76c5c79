import { iso } from '../platform/dates';
import type { AttemptRow, DeliveryRow, SubscriptionRow } from './repository';
import type { AttemptView, DeliveryView, SubscriptionView } from './schemas';

// Rows as the routes answer them; secrets never appear here.

export const subscriptionView = (row: SubscriptionRow): SubscriptionView => ({
  id: row.id,
  url: row.url,
  events: row.events,
  description: row.description,
  execution_id: row.execution_id,
  format: row.format,
  created_at: iso(row.created_at),
});

const attemptView = (row: AttemptRow): AttemptView => ({
  attempt_no: row.attempt_no,
  started_at: iso(row.started_at),
  latency_ms: row.latency_ms,
  outcome: row.outcome,
  response_code: row.response_code,
  response_body: row.response_body,
  error: row.error,
});

/** `body`: what the attempts send, in the callback's format (the caller renders it). */
export const deliveryView = (row: DeliveryRow, attempts: readonly AttemptRow[], body = row.body): DeliveryView => ({
  delivery_id: row.id,
  subscription_id: row.subscription_id,
  execution_id: row.execution_id,
  event_id: row.event_id,
  event_type: row.event_type,
  status: row.status,
  attempts: attempts.map(attemptView),
  series: row.series,
  created_at: iso(row.created_at),
  delivered_at: iso(row.delivered_at),
  body,
});
