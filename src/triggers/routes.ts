import { z } from 'zod';
import { defineRoute, RouteAnswer } from '../platform/api/route';
import { RateLimitedError } from '../platform/errors';
import { LIMITS } from '../rules/limits';
import type { TriggerIntake } from './intake';
import { INTAKE_STATUS } from './intake';
import { readRawBody } from './raw-body';
import {
  CreateTriggerRequest,
  DeliveryDetail,
  DeliveryListQuery,
  DeliveryParams,
  DeliverySummary,
  IntakeAccepted,
  IntakeHeaders,
  IntakeRefused,
  RedeliverResponse,
  SlackChallenge,
  SlugParams,
  TriggerIdParams,
  TriggerRow,
  TriggerWithSecret,
  UpdatedTrigger,
  UpdateTriggerRequest,
} from './schemas';
import type { TriggerService } from './service';

const tags = ['triggers'] as const;
const scope = 'triggers:manage' as const;
const notFound = { 404: 'No such trigger in this workspace' };
const MIB = LIMITS.webhook.bodyBytes / (1024 * 1024);

/** The path of the signed intake; the app's JSON parser leaves it alone (the HMAC covers raw bytes). */
export const WEBHOOK_INTAKE_PATH = '/v1/triggers/webhook/{slug}';

const example = {
  slug: 'ci-builds',
  event_filter: { expression: "body.action == 'completed'" },
  run: { agent: 'playbook' as const, input: { steps: [{ tool: 'agent.start_session', input: { name: 'ci' } }] } },
};

export const triggerRoutes = (triggers: TriggerService, intake: TriggerIntake) => [
  defineRoute({
    method: 'post',
    path: '/v1/triggers',
    operationId: 'createTrigger',
    summary: 'Create a webhook trigger; its secret is shown once',
    description:
      'A trigger’s intake URL is named by its `slug`: the name asked for plus a random suffix of ten characters ' +
      '(so slugs cannot be guessed, and no workspace meets another’s). It optionally filters deliveries ' +
      'with a JMESPath expression (compiled now: a syntax error is 422), and dispatches `run` — checked as ' +
      '`POST /v1/runs` checks a dispatch, with this credential’s scopes, which its runs keep. The secret is ' +
      '32 random bytes, encrypted at rest, and appears only in this response and on rotation. A trigger ' +
      'starts runs, so this needs `runs:write` as well (403 without). A filter whose fan-out could exceed ' +
      `${LIMITS.webhook.filter.maxFanOut} times its input is 422. The trigger stops dispatching once the ` +
      'creating credential expires or is revoked.',
    tags,
    scope,
    body: CreateTriggerRequest,
    example,
    status: 201,
    response: TriggerWithSecret,
    errors: { 400: 'The run’s steps need a scope this credential lacks' },
    handler: ({ auth, body }) => triggers.create(auth, body),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/triggers',
    operationId: 'listTriggers',
    summary: 'List the workspace’s webhook triggers, newest first',
    description: 'Every trigger of the workspace; secrets are never shown again.',
    tags,
    scope,
    response: z.array(TriggerRow),
    handler: ({ auth }) => triggers.list(auth),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/triggers/{id}',
    operationId: 'getTrigger',
    summary: 'Get one webhook trigger',
    description:
      'One trigger; another workspace’s is 404. `suspended` says why Weft disabled it (its filter ran out ' +
      'of its budget too many times in a row), until a PATCH enables it.',
    tags,
    scope,
    params: TriggerIdParams,
    response: TriggerRow,
    errors: notFound,
    handler: ({ auth, params }) => triggers.get(auth, params.id),
  }),
  defineRoute({
    method: 'patch',
    path: '/v1/triggers/{id}',
    operationId: 'updateTrigger',
    summary: 'Enable or disable a trigger, change its filter or run, rotate its secret',
    description:
      `\`rotate_secret: true\` returns a new secret; the previous one keeps verifying for ` +
      `${LIMITS.webhook.rotationGraceHours} hours, so senders can switch without losing deliveries. ` +
      'A disabled trigger’s intake answers 404. Enabling, changing `event_filter` or `run`, or rotating needs ' +
      '`runs:write` as well (403 without), makes the caller the identity the runs act as, and checks the ' +
      'template against its scopes. Disabling needs `triggers:manage` alone. `enabled: true` also clears a ' +
      '`suspended` trigger (its filter kept running out of its budget, issue 43).',
    tags,
    scope,
    params: TriggerIdParams,
    body: UpdateTriggerRequest,
    example: { rotate_secret: true },
    response: UpdatedTrigger,
    errors: { ...notFound, 400: 'The run’s steps need a scope this credential lacks' },
    handler: ({ auth, params, body }) => triggers.update(auth, params.id, body),
  }),
  defineRoute({
    method: 'delete',
    path: '/v1/triggers/{id}',
    operationId: 'deleteTrigger',
    summary: 'Delete a trigger and its delivery records',
    description: 'The slug becomes free again; the runs it dispatched stay.',
    tags,
    scope,
    params: TriggerIdParams,
    response: TriggerRow,
    errors: notFound,
    handler: ({ auth, params }) => triggers.remove(auth, params.id),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/triggers/{id}/deliveries',
    operationId: 'listTriggerDeliveries',
    summary: 'List a trigger’s delivery records, newest first',
    description:
      `Every request to the trigger’s slug, 401s included, kept ${LIMITS.webhook.retentionDays} days. ` +
      'Page with `limit` and `cursor` (the last `delivery_id` of the previous page).',
    tags,
    scope,
    params: TriggerIdParams,
    query: DeliveryListQuery,
    response: z.array(DeliverySummary),
    errors: notFound,
    handler: ({ auth, params, query }) => triggers.deliveries(auth, params.id, query),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/triggers/{id}/deliveries/{delivery_id}',
    operationId: 'getTriggerDelivery',
    summary: 'Get one delivery record with its raw headers and body',
    description: 'The headers as received and the exact body bytes (base64, and as text when it is UTF-8).',
    tags,
    scope,
    params: DeliveryParams,
    response: DeliveryDetail,
    errors: { 404: 'No such trigger or delivery in this workspace' },
    handler: ({ auth, params }) => triggers.delivery(auth, params.id, params.delivery_id),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/triggers/{id}/deliveries/{delivery_id}/redeliver',
    operationId: 'redeliverTriggerDelivery',
    summary: 'Dispatch a recorded, accepted delivery again',
    description:
      'Dispatches the trigger’s run again with the recorded headers and body and a fresh idempotency key, ' +
      'as a new delivery record (`redelivery_of`). The filter is not consulted. Needs `runs:write` as well ' +
      '(403 without), makes the caller the identity the trigger’s runs act as, and is limited to ' +
      '`WEBHOOK_REDELIVERIES_PER_TRIGGER` per trigger and minute (429 with Retry-After).',
    tags,
    scope,
    params: DeliveryParams,
    status: 202,
    response: RedeliverResponse,
    errors: {
      404: 'No such trigger or delivery in this workspace',
      400: 'The run’s steps need a scope this credential lacks',
      409: 'The delivery was not accepted (401, 400, 413), or its run was refused',
    },
    handler: ({ auth, params }) => triggers.redeliver(auth, params.id, params.delivery_id),
  }),
  defineRoute({
    method: 'post',
    path: WEBHOOK_INTAKE_PATH,
    operationId: 'receiveWebhook',
    summary: 'Receive a signed webhook (no bearer token)',
    description:
      `The body is read as raw bytes (at most ${MIB} MiB; more is 413 without reading the rest). ` +
      'A trigger’s `signature.scheme` names the sender’s headers (see docs/clients.md, Webhook senders); ' +
      'for the default `weft`, `X-Service-Signature: t=<unix seconds>,v1=<hex>` must carry HMAC-SHA256 of ' +
      '`<t>.<raw body>` under the ' +
      `trigger’s secret in lowercase hex (several \`v1\` may be sent; any one matching passes), with \`t\` ` +
      `within ${LIMITS.webhook.timestampSkewSeconds} s of server time either way. A repeated ` +
      '`X-Service-Idempotency-Key` (or the sender’s own delivery id: `X-GitHub-Delivery`, `webhook-id`, ' +
      'Stripe’s event `id`, Slack’s `event_id`), or the same signed request again (same `t` and body) under any key, ' +
      'answers the earlier delivery and run. A filter that is false or fails (including past its time or ' +
      'memory budget) accepts without dispatching. Every request to a known slug is recorded, refused ones ' +
      `included; an unverified one keeps only its size, SHA-256 and first ` +
      `${LIMITS.webhook.intake.unverifiedBodyBytes} bytes. Rate-limited per source address and per slug.`,
    tags,
    public: true,
    credentials: ['webhook_signature'],
    params: SlugParams,
    headers: IntakeHeaders,
    rawBody: {
      mediaTypes: ['application/json', 'application/x-www-form-urlencoded', 'text/plain'],
      description: 'Any bytes; these are signed exactly as sent.',
      example: '{"action":"opened","issue":{"number":7}}',
      // Slack's slash commands and interactivity post forms; GitHub can send its payload as one.
      examples: { 'application/x-www-form-urlencoded': 'payload=%7B%22action%22%3A%22opened%22%7D' },
    },
    status: 202,
    response: IntakeAccepted,
    errors: {
      200: {
        description: 'A `slack` trigger’s verified URL verification handshake: its challenge (recorded, nothing runs)',
        body: SlackChallenge,
      },
      400: { description: 'The idempotency key is longer than allowed or not printable ASCII', body: IntakeRefused },
      401: { description: 'Signature missing, malformed, wrong, or `t` outside the window', body: IntakeRefused },
      404: 'Unknown or disabled slug (nothing is recorded)',
      413: `The body is larger than ${MIB} MiB`,
      429:
        'Too many requests from this address or to this slug (`WEBHOOK_INTAKE_PER_SOURCE`, ' +
        '`WEBHOOK_INTAKE_PER_SLUG` per minute); refused before the body is read and counted on the trigger',
    },
    handler: async ({ params, ctx }) => {
      const outcome = await intake
        .receive(params.slug, {
          rawHeaders: ctx.req.rawHeaders,
          source: ctx.ip || 'unknown',
          readBody: async (limit) => {
            const body = await readRawBody(ctx.req, limit);
            // The rest of the body is left unread, so this connection cannot carry another request.
            if (!body) ctx.set('Connection', 'close');
            return body;
          },
        })
        .catch((error: unknown) => {
          // Refused before the body was read (429): the unread body must not be taken for a next request.
          if (error instanceof RateLimitedError) ctx.set('Connection', 'close');
          throw error;
        });
      if (outcome.kind === 'accepted') return outcome.body;
      if (outcome.kind === 'challenge') return new RouteAnswer(INTAKE_STATUS.url_verification, outcome.body);
      if (outcome.kind === 'body_too_large') {
        return new RouteAnswer(INTAKE_STATUS.body_too_large, { detail: `Request body above ${MIB} MiB` });
      }
      return new RouteAnswer(INTAKE_STATUS[outcome.kind], outcome.body);
    },
  }),
];
