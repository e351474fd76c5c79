import { z } from 'zod';
import { defineRoute } from '../platform/api/route';
import { LIMITS } from '../rules/limits';
import {
  CreateSubscriptionRequest,
  DeliveryList,
  DeliveryListQuery,
  RedeliverResponse,
  RunDeliveryParams,
  RunParams,
  SubscriptionDeliveryParams,
  SubscriptionIdParams,
  SubscriptionView,
  SubscriptionWithSecret,
} from './schemas';
import type { RunCallbackService } from './service';

const tags = ['run-callbacks'] as const;
const scope = 'run_callbacks:manage' as const;
const notFound = { 404: 'No such callback subscription in this workspace' };
const limits = LIMITS.runCallbacks;

const delivery =
  'Each callback is a POST of `{id, type, created_at, data: {execution_id, status, …}}` with ' +
  '`X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` under the secret (the scheme ' +
  'the webhook intake verifies, and Stripe’s: its library verifies it) and `X-Service-Idempotency-Key` (the ' +
  'delivery id, the same on every retry). A non-2xx, a redirect (not followed), a timeout ' +
  `(${limits.timeoutMs / 1000} s) or a network error is retried with exponential backoff for ` +
  `${limits.retryWindowHours} hours. Private, ` +
  'loopback and link-local addresses are refused at connect time unless the operator allows them. Deliveries ' +
  'stop once the creating credential is revoked or expires, or its user leaves the workspace.';

export const runCallbackRoutes = (callbacks: RunCallbackService) => [
  defineRoute({
    method: 'post',
    path: '/v1/run-callbacks',
    operationId: 'createRunCallback',
    summary: 'Subscribe a URL to every run’s events; the secret is shown once',
    description: `${delivery} Needs \`runs:read\` as well (403 without): a subscription receives every run’s output.`,
    tags,
    scope,
    body: CreateSubscriptionRequest,
    example: { url: 'https://example.com/weft/callbacks', events: ['run.finished', 'approval.requested'] },
    status: 201,
    response: SubscriptionWithSecret,
    handler: ({ auth, body }) => callbacks.create(auth, body),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/run-callbacks',
    operationId: 'listRunCallbacks',
    summary: 'List the workspace’s callback subscriptions, newest first',
    description: 'Standing subscriptions only (a dispatch’s own callback is under its run); secrets never appear.',
    tags,
    scope,
    response: z.object({ callbacks: z.array(SubscriptionView) }).meta({ id: 'RunCallbackList' }),
    handler: ({ auth }) => callbacks.list(auth),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/run-callbacks/{id}',
    operationId: 'getRunCallback',
    summary: 'Get one callback subscription',
    description: 'Another workspace’s is 404.',
    tags,
    scope,
    params: SubscriptionIdParams,
    response: SubscriptionView,
    errors: notFound,
    handler: ({ auth, params }) => callbacks.get(auth, params.id),
  }),
  defineRoute({
    method: 'delete',
    path: '/v1/run-callbacks/{id}',
    operationId: 'deleteRunCallback',
    summary: 'Delete a callback subscription and its delivery records',
    description: 'Deliveries still retrying stop at their next attempt.',
    tags,
    scope,
    params: SubscriptionIdParams,
    response: SubscriptionView,
    errors: notFound,
    handler: ({ auth, params }) => callbacks.remove(auth, params.id),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/run-callbacks/{id}/deliveries',
    operationId: 'listRunCallbackDeliveries',
    summary: 'A subscription’s deliveries with every attempt, newest first',
    description:
      'Each attempt’s outcome, latency, response code and the first bytes of the answer. Page with `limit` and ' +
      '`cursor` (the last `delivery_id` of the previous page). Needs `runs:read` as well (403 without): a ' +
      'delivery’s body carries its run’s output.',
    tags,
    scope,
    params: SubscriptionIdParams,
    query: DeliveryListQuery,
    response: DeliveryList,
    errors: notFound,
    handler: ({ auth, params, query }) => callbacks.deliveries(auth, params.id, query),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/run-callbacks/{id}/deliveries/{delivery_id}/redeliver',
    operationId: 'redeliverRunCallback',
    summary: 'Send a delivery again',
    description:
      'Whatever its status: the same body and idempotency key, signed afresh, retried for another ' +
      `${limits.retryWindowHours} hours. A delivery in flight leaves its attempts to this series.`,
    tags,
    scope,
    params: SubscriptionDeliveryParams,
    status: 202,
    response: RedeliverResponse,
    errors: { 404: 'No such subscription or delivery in this workspace' },
    handler: ({ auth, params }) => callbacks.redeliver(auth, { subscriptionId: params.id }, params.delivery_id),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/runs/{execution_id}/callbacks',
    operationId: 'listRunCallbackDeliveriesOfRun',
    summary: 'The deliveries of a run’s own callback (from its dispatch), with every attempt',
    description: `The \`callback\` a dispatch asked for. ${delivery}`,
    tags,
    scope: 'runs:read',
    params: RunParams,
    query: DeliveryListQuery,
    response: DeliveryList,
    errors: { 404: 'Unknown execution, or one of another workspace' },
    handler: ({ auth, params, query }) => callbacks.runDeliveries(auth, params.execution_id, query),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/runs/{execution_id}/callbacks/{delivery_id}/redeliver',
    operationId: 'redeliverRunCallbackOfRun',
    summary: 'Send a delivery of a run’s own callback again',
    description: 'As `POST /v1/run-callbacks/{id}/deliveries/{delivery_id}/redeliver`, for the dispatch’s callback.',
    tags,
    scope: 'runs:write',
    params: RunDeliveryParams,
    status: 202,
    response: RedeliverResponse,
    errors: { 404: 'Unknown execution or delivery in this workspace' },
    handler: ({ auth, params }) => callbacks.redeliver(auth, { executionId: params.execution_id }, params.delivery_id),
  }),
];
