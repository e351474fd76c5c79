import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import type { EntityManager } from 'typeorm';
import { storedPrincipalLive } from '../platform/auth/credential-liveness';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { freezeCredential } from '../platform/auth/stored-principal';
import type { Sealer } from '../platform/crypto/sealer';
import { newSigningSecret, signatureHeader } from '../platform/crypto/signature';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { ForbiddenError, NotFoundError, ValidationFailedError } from '../platform/errors';
import type { Logger } from '../platform/logger';
import type { OutboxRelay } from '../platform/outbox/relay';
import { enqueueEvent } from '../platform/outbox/relay';
import { LIMITS } from '../rules/limits';
import type { AddressPolicy } from './address-guard';
import { addressRefusal } from './address-guard';
import { runCallbackQueued } from './events';
import type { CallbackBodyFormat, CallbackFormat, ReceiverAuth } from './formats';
import { receiverHeaders } from './formats';
import * as repo from './repository';
import type { CreateSubscriptionRequest, DeliveryListQuery, DeliveryView, DispatchCallback } from './schemas';
import type { CallbackSender } from './sender';
import { deliveryView, subscriptionView } from './views';
import type { RunCallbackAttemptResult } from './workflow';

/** The caller as a subscription's deliveries will act as it, frozen now. */
const freeze = (principal: Principal): repo.CallbackPrincipal => ({
  userId: principal.userId,
  credential: freezeCredential(principal.credential),
});

/**
 * A standing subscription receives every run's output, and its deliveries' bodies carry it: creating
 * one and reading those bodies need the scope that reads runs (review NL-1), on top of the route's
 * `run_callbacks:manage`. A redelivery reveals nothing to its caller (it goes to the stored URL).
 */
function mayReadOutputs(principal: Principal, why: string) {
  if (!principal.scopes.has('runs:read')) throw new ForbiddenError(`Missing scope runs:read: ${why}`);
}

/**
 * Signed completion callbacks (issue 26 part 2): standing subscriptions under
 * `run_callbacks:manage`, a dispatch's own callback, their deliveries and redeliveries, and the one
 * attempt the delivery workflow repeats. What queues deliveries is `notify.ts`, in the run's own
 * transactions.
 */
export function createRunCallbackService(deps: {
  uow: UnitOfWork;
  /** Seals the callbacks' secrets at rest (WEFT_ENCRYPTION_KEY, a key derived for this purpose). */
  sealer: Sealer;
  send: CallbackSender;
  policy: AddressPolicy;
  outbox: Pick<OutboxRelay, 'kick'>;
  /** RUN_CALLBACK_RETRY_BASE_SECONDS, RUN_CALLBACK_RETRY_MAX_SECONDS. */
  retry: { baseSeconds: number; maxSeconds: number };
  logger: Logger;
  /** The body formats other than Weft's own (A2A push notifications, from the a2a feature). */
  formats: { a2a: CallbackBodyFormat };
}) {
  const { uow, sealer } = deps;
  // The receiver's token and credentials are sealed apart from the secret, bound to the same subscription.
  const authBinding = (workspaceId: string, id: string) => ({ workspaceId, correlationId: `${id}/receiver-auth` });

  /** The bytes a delivery's attempts send, in its callback's format. */
  const rendered = (row: { format: CallbackFormat; body: string }) =>
    row.format === 'a2a' ? deps.formats.a2a.render(row.body) : row.body;
  const windowMs = LIMITS.runCallbacks.retryWindowHours * 3600 * 1000;

  /** A URL naming a private address outright is refused now (a name is checked at connect time). */
  function checkUrl(url: string, loc: string[]) {
    const host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
    const refusal = isIP(host) ? addressRefusal(host, deps.policy) : null;
    if (refusal) throw new ValidationFailedError([{ loc, msg: refusal, type: 'callback_address' }]);
  }

  async function subscribe(
    m: EntityManager,
    principal: Principal,
    fields: {
      url: string;
      events: repo.SubscriptionRow['events'];
      description: string | null;
      executionId: string | null;
      /** An A2A push config's: its bodies are A2A's, presented with what its receiver checks. */
      push?: ReceiverAuth;
    },
  ) {
    const id = randomUUID();
    const secret = newSigningSecret();
    const { push } = fields;
    const row = await repo.insertSubscription(m, {
      id,
      workspace_id: principal.workspaceId,
      execution_id: fields.executionId,
      url: fields.url,
      events: fields.events,
      secret_sealed: sealer.seal(secret, { workspaceId: principal.workspaceId, correlationId: id }).sealed,
      principal: freeze(principal),
      description: fields.description,
      createdBy: principal.userId,
      format: push ? 'a2a' : 'weft',
      receiver_auth_sealed: push
        ? sealer.seal(JSON.stringify(push), authBinding(principal.workspaceId, id)).sealed
        : null,
    });
    return { row, secret };
  }

  async function mustFindStanding(m: EntityManager, id: string) {
    const found = await repo.findStanding(m, id);
    if (!found) throw new NotFoundError({ error: 'run_callback_not_found', id });
    return found;
  }

  async function mustFindRun(m: EntityManager, executionId: string) {
    if (!(await repo.runExists(m, executionId)))
      throw new NotFoundError({ error: 'run_not_found', execution_id: executionId });
  }

  async function withAttempts(m: EntityManager, rows: repo.DeliveryRow[]): Promise<DeliveryView[]> {
    const attempts = await repo.attemptsOf(
      m,
      rows.map((row) => row.id),
    );
    return rows.map((row) =>
      deliveryView(
        row,
        attempts.filter((attempt) => attempt.delivery_id === row.id),
        rendered(row),
      ),
    );
  }

  /** A new series of a delivery: pending again, a fresh 24 hours, its own workflow (through the outbox). */
  async function redeliverWithin(m: EntityManager, workspaceId: string, delivery: repo.DeliveryRow) {
    const series = await repo.startSeries(m, delivery.id);
    await enqueueEvent(m, runCallbackQueued, {
      workspaceId,
      aggregateId: delivery.id,
      payload: { delivery_id: delivery.id, series },
    });
    return { delivery_id: delivery.id, series, status: 'pending' as const };
  }

  return {
    /** Creates a dispatch's own callback inside the dispatch's transaction; its secret is answered once. */
    async attachToDispatch(m: EntityManager, principal: Principal, executionId: string, callback: DispatchCallback) {
      checkUrl(callback.url, ['body', 'callback', 'url']);
      const { row, secret } = await subscribe(m, principal, {
        url: callback.url,
        events: callback.events,
        description: null,
        executionId,
      });
      return { id: row.id, secret, events: row.events };
    },

    /**
     * A run's own callback added after its dispatch: that run's events only; the secret is answered
     * once. `push`: an A2A push notification config's, whose bodies are A2A's (format `a2a`), sent with
     * its token or credentials. Needs runs:read, as a subscription does.
     */
    async attachToRun(principal: Principal, executionId: string, callback: DispatchCallback, push?: ReceiverAuth) {
      mayReadOutputs(principal, 'a callback receives the run’s output');
      checkUrl(callback.url, ['params', 'url']);
      return uow(scopeOf(principal), async (m) => {
        await mustFindRun(m, executionId);
        const { row, secret } = await subscribe(m, principal, {
          ...callback,
          description: null,
          executionId,
          ...(push ? { push } : {}),
        });
        return { ...subscriptionView(row), secret };
      });
    },

    /** A run's own callbacks (its dispatch's, those added since); `id` narrows to one (none: an empty list). */
    ofRun: (principal: Principal, executionId: string, id?: string) =>
      uow(scopeOf(principal), async (m) => {
        await mustFindRun(m, executionId);
        return (await repo.listOfRun(m, executionId, id)).map(subscriptionView);
      }),

    /** Deletes one of a run's own callbacks; answers whether it was there. */
    removeOfRun: (principal: Principal, executionId: string, id: string) =>
      uow(scopeOf(principal), async (m) => {
        await mustFindRun(m, executionId);
        if ((await repo.listOfRun(m, executionId, id)).length === 0) return false;
        return repo.deleteSubscription(m, id);
      }),

    /** Checks a dispatch's callback before anything is written (the same 422 as on create). */
    checkDispatchCallback: (callback: DispatchCallback) => checkUrl(callback.url, ['body', 'callback', 'url']),

    async create(principal: Principal, body: CreateSubscriptionRequest) {
      mayReadOutputs(principal, 'a callback subscription receives every run’s output');
      checkUrl(body.url, ['body', 'url']);
      return uow(scopeOf(principal), async (m) => {
        const { row, secret } = await subscribe(m, principal, {
          url: body.url,
          events: body.events,
          description: body.description ?? null,
          executionId: null,
        });
        return { ...subscriptionView(row), secret };
      });
    },

    list: (principal: Principal) =>
      uow(scopeOf(principal), async (m) => ({ callbacks: (await repo.listStanding(m)).map(subscriptionView) })),

    get: (principal: Principal, id: string) =>
      uow(scopeOf(principal), async (m) => subscriptionView(await mustFindStanding(m, id))),

    /** Deletes the subscription and its delivery records; a delivery in flight finds it gone and stops. */
    remove: (principal: Principal, id: string) =>
      uow(scopeOf(principal), async (m) => {
        const row = subscriptionView(await mustFindStanding(m, id));
        await repo.deleteSubscription(m, id);
        return row;
      }),

    async deliveries(principal: Principal, id: string, query: DeliveryListQuery) {
      mayReadOutputs(principal, 'a delivery’s body carries its run’s output');
      return uow(scopeOf(principal), async (m) => {
        await mustFindStanding(m, id);
        const rows = await repo.listDeliveries(m, { subscriptionId: id }, query.limit, query.cursor);
        return { deliveries: await withAttempts(m, rows) };
      });
    },

    /** The deliveries of a run's own callback (from its dispatch), newest first. */
    runDeliveries: (principal: Principal, executionId: string, query: DeliveryListQuery) =>
      uow(scopeOf(principal), async (m) => {
        await mustFindRun(m, executionId);
        const rows = await repo.listDeliveries(m, { executionId }, query.limit, query.cursor);
        return { deliveries: await withAttempts(m, rows) };
      }),

    /** Sends a delivery again, whatever became of it, as a new series (the same body and idempotency key). */
    async redeliver(principal: Principal, by: { subscriptionId: string } | { executionId: string }, id: string) {
      const answer = await uow(scopeOf(principal), async (m) => {
        if ('subscriptionId' in by) await mustFindStanding(m, by.subscriptionId);
        else await mustFindRun(m, by.executionId);
        const delivery = await repo.findDelivery(m, id, true);
        const belongs =
          delivery &&
          ('subscriptionId' in by
            ? delivery.subscription_id === by.subscriptionId
            : delivery.subscription.execution_id === by.executionId);
        if (!delivery || !belongs) throw new NotFoundError({ error: 'delivery_not_found', delivery_id: id });
        return redeliverWithin(m, principal.workspaceId, delivery);
      });
      deps.outbox.kick(principal.workspaceId);
      return answer;
    },

    /**
     * One attempt of a delivery's series (the workflow's activity): checks the creator's
     * credential, signs the stored body at the current time, POSTs it and records the attempt. The
     * POST is outside any transaction. Answers when to try again, or that the series is over.
     */
    async attempt(workspaceId: string, deliveryId: string, series: number): Promise<RunCallbackAttemptResult> {
      const prepared = await uow({ workspaceId }, async (m) => {
        const delivery = await repo.findDelivery(m, deliveryId);
        // Deleted with its subscription, or taken over by a redelivery's series: this series is over.
        if (!delivery || delivery.series !== series) return { over: 'stopped' as const };
        if (delivery.status !== 'pending') return { over: delivery.status as 'delivered' | 'failed' | 'stopped' };
        const subscription = delivery.subscription;
        if (!(await storedPrincipalLive(m, workspaceId, subscription.principal))) {
          await repo.lockDelivery(m, deliveryId);
          await repo.recordAttempt(
            m,
            { id: deliveryId, workspaceId },
            {
              started_at: new Date(),
              latency_ms: null,
              outcome: 'credential_revoked',
              response_code: null,
              response_body: null,
              error: 'The credential that created this callback was revoked or has expired, or its user left',
            },
            'stopped',
          );
          return { over: 'stopped' as const };
        }
        const secret = sealer.open(
          { sealed: subscription.secret_sealed },
          { workspaceId, correlationId: subscription.id },
        );
        const auth = subscription.receiver_auth_sealed
          ? (JSON.parse(
              sealer.open({ sealed: subscription.receiver_auth_sealed }, authBinding(workspaceId, subscription.id)),
            ) as ReceiverAuth)
          : null;
        return { delivery, url: subscription.url, secret, auth };
      });
      if ('over' in prepared) return { status: prepared.over ?? 'stopped' };
      const { delivery, url, secret, auth } = prepared;
      const body = rendered(delivery);
      const startedAt = new Date();
      const t = Math.floor(startedAt.getTime() / 1000);
      const sent = await deps.send(url, body, {
        'user-agent': 'Weft-Callbacks/1',
        ...(delivery.format === 'a2a' ? { 'content-type': deps.formats.a2a.contentType } : {}),
        ...receiverHeaders(auth),
        'x-service-signature': signatureHeader(secret, body, t),
        'x-service-idempotency-key': delivery.id,
        'x-service-event': delivery.event_type,
      });
      return uow({ workspaceId }, async (m) => {
        const now = await repo.findDelivery(m, deliveryId, true);
        if (!now) return { status: 'stopped' };
        const current = now.series === series && now.status === 'pending';
        const windowEnds = new Date(now.series_started_at).getTime() + windowMs;
        const status: repo.DeliveryRow['status'] = !current
          ? now.status
          : sent.outcome === 'succeeded'
            ? 'delivered'
            : sent.outcome === 'refused' || Date.now() >= windowEnds
              ? 'failed'
              : 'pending';
        await repo.recordAttempt(
          m,
          { id: deliveryId, workspaceId },
          {
            started_at: startedAt,
            latency_ms: sent.latencyMs,
            outcome: sent.outcome,
            response_code: sent.responseCode,
            response_body: sent.responseBody,
            error: sent.error,
          },
          status,
        );
        if (!current) return { status: 'stopped' };
        if (status !== 'pending') return { status };
        if (sent.outcome === 'failed') {
          deps.logger.info({ delivery_id: deliveryId, code: sent.responseCode }, 'run callback failed; will retry');
        }
        const n = await repo.seriesAttempts(m, deliveryId);
        const backoffMs = Math.min(deps.retry.baseSeconds * 2 ** (n - 1), deps.retry.maxSeconds) * 1000;
        return { retryInMs: Math.max(1, Math.min(Math.round(backoffMs), windowEnds - Date.now())) };
      });
    },
  };
}

export type RunCallbackService = ReturnType<typeof createRunCallbackService>;
