import { z } from 'zod';
import { LIMITS } from '../rules/limits';
import { CALLBACK_EVENT_TYPES } from './events';
import { CALLBACK_FORMATS } from './formats';

const timestamp = z.iso.datetime({ offset: true });
const limits = LIMITS.runCallbacks;

/** An absolute http(s) URL; anything else (another scheme, a relative or over-long URL) is a 422. */
export const CallbackUrl = z
  .string()
  .max(limits.urlChars)
  .refine(
    (value) => {
      try {
        const url = new URL(value);
        return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
      } catch {
        return false;
      }
    },
    { message: 'Must be an absolute http:// or https:// URL' },
  )
  .describe(
    `Where the callbacks are POSTed: http(s), at most ${limits.urlChars} characters. Private, loopback and ` +
      'link-local addresses are refused at connect time unless the operator allows them.',
  );

export const CallbackEventType = z.enum(CALLBACK_EVENT_TYPES);

const format = z
  .enum(CALLBACK_FORMATS)
  .describe(
    'How the bodies are written: `weft`, Weft’s envelope `{id, type, created_at, data}`; `a2a`, an A2A push ' +
      'notification (a StreamResponse in A2A’s JSON: `statusUpdate`, or the `task` when the run ended), made by ' +
      'an A2A push notification config, with its `X-A2A-Notification-Token` (or `Authorization`).',
  );

const events = z
  .array(CallbackEventType)
  .min(1)
  .max(CALLBACK_EVENT_TYPES.length)
  .transform((list) => [...new Set(list)])
  .describe(
    'The run events to POST: `run.finished` (default), `approval.requested`, `waitpoint.created` (with a ' +
      '`run.wait_for` waitpoint’s one-time token), `waitpoint.completed`.',
  );

/** A dispatch's own callback (`POST /v1/runs`'s `callback`): that run's events only. */
export const DispatchCallback = z
  .object({ url: CallbackUrl, events: events.default(['run.finished']) })
  .strict()
  .meta({ id: 'DispatchCallback' });
export type DispatchCallback = z.output<typeof DispatchCallback>;

/** What the dispatch answers about its callback: the secret, this once. */
export const DispatchCallbackCreated = z
  .object({
    id: z.uuid().describe('The callback’s subscription id; its deliveries are under `GET /v1/runs/{id}/callbacks`.'),
    secret: z.string().describe('The HMAC key the callbacks are signed with; shown only in this answer.'),
    events: z.array(CallbackEventType),
  })
  .meta({ id: 'DispatchCallbackCreated' });

export const CreateSubscriptionRequest = z
  .object({
    url: CallbackUrl,
    events: events.default(['run.finished']),
    description: z.string().max(limits.descriptionChars).optional(),
  })
  .strict()
  .meta({ id: 'CreateRunCallbackRequest' });
export type CreateSubscriptionRequest = z.output<typeof CreateSubscriptionRequest>;

export const SubscriptionView = z
  .object({
    id: z.uuid(),
    url: z.string(),
    events: z.array(CallbackEventType),
    description: z.string().nullable(),
    execution_id: z.uuid().nullable().describe('A dispatch’s own callback: its run. null: every run.'),
    format,
    created_at: timestamp,
  })
  .meta({ id: 'RunCallback' });
export type SubscriptionView = z.input<typeof SubscriptionView>;

export const SubscriptionWithSecret = SubscriptionView.extend({
  secret: z.string().describe('The HMAC key the callbacks are signed with; shown only on creation.'),
}).meta({ id: 'RunCallbackWithSecret' });

export const AttemptView = z
  .object({
    attempt_no: z.number().int(),
    started_at: timestamp,
    latency_ms: z.number().int().nullable(),
    outcome: z
      .enum(['succeeded', 'failed', 'refused', 'credential_revoked'])
      .describe(
        '`succeeded`: a 2xx. `failed`: another status (a 3xx too: redirects are not followed), a timeout or a ' +
          'network error. `refused`: the address is private (nothing was sent). `credential_revoked`: the ' +
          'creating credential may no longer act (nothing was sent; delivery stops).',
      ),
    response_code: z.number().int().nullable(),
    response_body: z
      .string()
      .nullable()
      .describe(`The answer’s first ${limits.storedBodyBytes} bytes (at most ${limits.responseBodyBytes} are read).`),
    error: z.string().nullable(),
  })
  .meta({ id: 'RunCallbackAttempt' });
export type AttemptView = z.input<typeof AttemptView>;

export const DeliveryView = z
  .object({
    delivery_id: z.uuid().describe('Also the `X-Service-Idempotency-Key` of every attempt.'),
    subscription_id: z.uuid(),
    execution_id: z.uuid(),
    event_id: z.uuid().describe('The body’s `id`: one per event, the same for every subscription.'),
    event_type: CallbackEventType,
    status: z
      .enum(['pending', 'delivered', 'failed', 'stopped'])
      .describe(
        '`pending`: retrying. `failed`: the retry window ended, or the address was refused. `stopped`: the ' +
          'creating credential was revoked.',
      ),
    attempts: z.array(AttemptView),
    series: z.number().int().describe('Redeliveries so far.'),
    created_at: timestamp,
    delivered_at: timestamp.nullable(),
    body: z.string().describe('The exact body every attempt signs and sends (in its callback’s `format`).'),
  })
  .meta({ id: 'RunCallbackDelivery' });
export type DeliveryView = z.input<typeof DeliveryView>;

export const DeliveryList = z.object({ deliveries: z.array(DeliveryView) }).meta({ id: 'RunCallbackDeliveryList' });

export const DeliveryListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(limits.list.max).default(limits.list.default),
  cursor: z.uuid().optional().describe('The last `delivery_id` of the previous page.'),
});
export type DeliveryListQuery = z.output<typeof DeliveryListQuery>;

export const SubscriptionIdParams = z.object({ id: z.uuid() });
export const SubscriptionDeliveryParams = z.object({ id: z.uuid(), delivery_id: z.uuid() });
export const RunDeliveryParams = z.object({ execution_id: z.uuid(), delivery_id: z.uuid() });
export const RunParams = z.object({ execution_id: z.uuid() });

export const RedeliverResponse = z
  .object({ delivery_id: z.uuid(), series: z.number().int(), status: z.literal('pending') })
  .meta({ id: 'RunCallbackRedelivered' });
