import { iso } from '../platform/dates';
import type { WebhookDelivery, WebhookTrigger } from './entities';
import type { DeliveryDetail, DeliverySummary, TriggerRow } from './schemas';

// The entity → response mappers of trigger management (`service.ts`): rows as the routes answer them.

export const triggerRow = (trigger: WebhookTrigger): TriggerRow => ({
  id: trigger.id,
  slug: trigger.slug,
  enabled: trigger.enabled,
  event_filter: trigger.filterExpression ? { expression: trigger.filterExpression } : null,
  run: trigger.runTemplate,
  signature: { scheme: trigger.signatureScheme },
  previous_secret_expires_at: iso(trigger.previousSecretExpiresAt),
  rate_limited: { count: Number(trigger.rateLimitedCount), last_at: iso(trigger.rateLimitedAt) },
  suspended:
    trigger.suspendedReason && trigger.suspendedAt
      ? { reason: trigger.suspendedReason, at: trigger.suspendedAt.toISOString() }
      : null,
  created_at: trigger.createdAt.toISOString(),
  updated_at: trigger.updatedAt.toISOString(),
});

export const summaryOf = (row: {
  id: string;
  status_code: number;
  reason: string | null;
  execution_id: string | null;
  received_at: Date;
  filter_result: WebhookDelivery['filterResult'];
  duplicate_of: string | null;
  redelivery_of: string | null;
}): DeliverySummary => ({
  delivery_id: row.id,
  status_code: row.status_code,
  reason: row.reason,
  execution_id: row.execution_id,
  received_at: new Date(row.received_at).toISOString(),
  filter_result: row.filter_result,
  duplicate_of: row.duplicate_of,
  redelivery_of: row.redelivery_of,
});

function utf8OrNull(body: Buffer): string | null {
  const text = body.toString('utf8');
  return Buffer.from(text, 'utf8').equals(body) ? text : null;
}

export const detailOf = (d: WebhookDelivery): DeliveryDetail => ({
  ...summaryOf({
    id: d.id,
    status_code: d.statusCode,
    reason: d.reason,
    execution_id: d.executionId,
    received_at: d.receivedAt,
    filter_result: d.filterResult,
    duplicate_of: d.duplicateOf,
    redelivery_of: d.redeliveryOf,
  }),
  trigger_id: d.triggerId,
  idempotency_key: d.idempotencyKey,
  filter_error: d.filterError,
  headers: d.headers,
  body_base64: d.body ? d.body.toString('base64') : null,
  body_text: d.body ? utf8OrNull(d.body) : null,
  body_size: d.bodySize,
  body_sha256: d.bodySha256,
  body_truncated: d.body !== null && d.bodySize !== null && d.body.length < d.bodySize,
});
