import { createHash } from 'node:crypto';
import { parseBodyForFilter } from '../filters/filter';
import type { FilterPool } from '../filters/pool';
import { storedPrincipalLive } from '../platform/auth/credential-liveness';
import type { Sealer } from '../platform/crypto/sealer';
import type { ScopedRead, Statement, UnitOfWork } from '../platform/db/unit-of-work';
import { NotFoundError } from '../platform/errors';
import type { Logger } from '../platform/logger';
import { LIMITS } from '../rules/limits';
import type { RunService } from '../runs/service';
import { createTriggerDispatch } from './dispatch';
import { headerRecord, pairsOf } from './headers';
import { createLru } from './intake-cache';
import type { IntakeLimiter } from './intake-limiter';
import * as repo from './repository';
import type { IntakeAccepted } from './schemas';
import { deliveryKey, slackChallenge, verifyDelivery } from './schemes';

/** The HTTP status each intake outcome answers with; delivery records keep it as `status_code`. */
export const INTAKE_STATUS = {
  accepted: 202,
  url_verification: 200,
  idempotency_key_invalid: 400,
  signature_invalid: 401,
  body_too_large: 413,
} as const;

export type IntakeOutcome =
  | { kind: 'accepted'; body: IntakeAccepted }
  | { kind: 'challenge'; body: { challenge: string } }
  | { kind: 'signature_invalid' | 'idempotency_key_invalid'; body: { delivery_id: string; reason: string } }
  | { kind: 'body_too_large' };

/** An inbound request as the intake needs it: no framework, the body read only on demand. */
export interface InboundRequest {
  /** Node's rawHeaders: name, value, name, value … in the order and case received. */
  rawHeaders: readonly string[];
  /** The body's bytes, or null when it exceeds the cap (the rest is left unread). */
  readBody(limit: number): Promise<Buffer | null>;
  /** The peer's address, which the intake's per-source limit counts. */
  source: string;
}

const PRINTABLE_KEY = new RegExp(`^[\\x20-\\x7e]{1,${LIMITS.webhook.idempotencyKeyChars}}$`);

const sha256Hex = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/**
 * The signed webhook intake (issue 13, contract 4.6), the hot path of webhook triggers with its own
 * per-process state: limits, verification, filter, the delivery record and the dispatch. It resolves
 * its slug through the one definer function, verifies before it reads anything else of the trigger,
 * then records and dispatches in one transaction under the trigger's workspace, so a delivery and
 * its run commit together and concurrent requests with one key meet on a unique index. Management
 * of triggers is `service.ts`.
 */
export function createTriggerIntake(deps: {
  uow: UnitOfWork;
  /** One-statement reads: the verified trigger, when the intake's cached copy is not current. */
  read: ScopedRead;
  /** Pooled single statements, outside any transaction: the slug lookup and the one-statement records. */
  statement: Statement;
  /** Opens secrets sealed at rest (WEFT_ENCRYPTION_KEY, a key derived for this purpose). */
  sealer: Sealer;
  runs: Pick<RunService, 'dispatchWithin' | 'kick'>;
  /** Evaluates filters in worker threads under a time and memory budget. */
  filters: FilterPool;
  /** The intake's per-source and per-slug limits. */
  limiter: IntakeLimiter;
  logger: Logger;
  /** Tests move the clock to check the skew window. */
  now?: () => number;
}) {
  const { uow, sealer, runs } = deps;
  const now = deps.now ?? Date.now;
  const dispatch = createTriggerDispatch({ runs, logger: deps.logger });
  const open = (sealed: string, workspaceId: string, triggerId: string) =>
    sealer.open({ sealed }, { workspaceId, correlationId: triggerId });

  // The intake's per-process caches. Each key carries what makes its entry current, so nothing is
  // ever invalidated and nothing stale can be served: a trigger's configuration is used only when
  // its revision equals the one the slug function just returned (every PATCH bumps it; a disabled
  // or deleted trigger never gets this far), and an opened secret is keyed by its sealed text and
  // binding (a rotation seals a new text; an expired previous secret is no longer returned).
  const configs = createLru<string, repo.IntakeTrigger>(LIMITS.webhook.intakeCacheEntries);
  const openedSecrets = createLru<string, string>(LIMITS.webhook.intakeCacheEntries);
  const openCached = (sealed: string, workspaceId: string, triggerId: string) => {
    const key = `${workspaceId}\n${triggerId}\n${sealed}`;
    let secret = openedSecrets.get(key);
    if (secret === undefined) {
      secret = open(sealed, workspaceId, triggerId);
      openedSecrets.set(key, secret);
    }
    return secret;
  };
  /** The trigger's configuration at `revision`: from the cache, else read (and cached at the revision read). */
  async function intakeConfig(target: repo.SlugTarget): Promise<repo.IntakeTrigger | undefined> {
    const cached = configs.get(target.trigger_id);
    if (cached?.revision === target.revision) return cached;
    const fresh = await repo.intakeTrigger(deps.read, target.workspace_id, target.trigger_id);
    if (fresh) configs.set(fresh.id, fresh);
    return fresh;
  }

  // Issue 43 item 3 (review NM-8): how many times in a row each trigger's filter ran out of its budget
  // here, keyed by the trigger's revision, so a PATCH (a new filter, enabling it again) starts afresh.
  const budgetFailures = createLru<string, number>(LIMITS.webhook.intakeCacheEntries);
  const { suspendAfterTimeouts } = LIMITS.webhook.filter;
  /** Counts a filter's budget failure (any other outcome ends the run); the last allowed suspends the trigger. */
  async function watchFilter(trigger: repo.IntakeTrigger, error: string | null) {
    const key = `${trigger.id}\n${trigger.revision}`;
    if (!error?.startsWith('filter_budget')) {
      if (budgetFailures.get(key) !== undefined) budgetFailures.set(key, 0);
      return;
    }
    const failures = (budgetFailures.get(key) ?? 0) + 1;
    budgetFailures.set(key, failures);
    if (failures < suspendAfterTimeouts) return;
    const reason =
      `filter_timeouts: its filter ran out of its budget ${failures} times in a row ` +
      `(last: ${error.slice(0, 200)}); PATCH enabled: true once the filter is fixed`;
    const suspended = await uow({ workspaceId: trigger.workspaceId }, (m) =>
      repo.suspendTrigger(m, trigger.id, reason),
    );
    if (suspended)
      deps.logger.warn({ trigger_id: trigger.id }, 'webhook trigger suspended: its filter keeps timing out');
  }

  /**
   * Contract 4.6: the intake. Unknown or disabled slug → NotFoundError, recording nothing. The
   * common outcomes (refusals; an unkeyed delivery that dispatches nothing) are two round trips,
   * the slug lookup and the record, once the trigger's configuration is cached at its current
   * revision; a key or a dispatch takes one transaction for the record and the run together.
   */
  async function receive(slug: string, request: InboundRequest): Promise<IntakeOutcome> {
    // Before a byte of the body is read (review H-3): refused requests cost no read and no query.
    await deps.limiter.admit(slug.toLowerCase().slice(0, 63), request.source);
    // The body streams in while the slug is looked up (a large one takes a while), under the cap.
    // An unknown slug still waits for the read to settle, so the route knows whether the
    // connection must close (an over-cap body is left unread).
    const reading = request.readBody(LIMITS.webhook.bodyBytes);
    const target = await repo.triggerForSlug(deps.statement, slug).catch(async (error: unknown) => {
      await reading.catch(() => null);
      throw error;
    });
    if (!target) {
      await reading.catch(() => null);
      throw new NotFoundError({ error: 'trigger_not_found', slug });
    }
    const pairs = pairsOf(request.rawHeaders);
    const record = (row: Omit<repo.NewDelivery, 'workspaceId' | 'triggerId' | 'headers'>) =>
      repo.recordDelivery(deps.statement, {
        workspaceId: target.workspace_id,
        triggerId: target.trigger_id,
        headers: pairs,
        ...row,
      });

    const body = await reading;
    if (!body) {
      await record({ body: null, statusCode: INTAKE_STATUS.body_too_large, reason: 'body_too_large' });
      return { kind: 'body_too_large' };
    }
    const headers = headerRecord(pairs);
    const digest = { bodySize: body.length, bodySha256: sha256Hex(body) };
    const secrets = [target.secret_sealed, target.previous_secret_sealed]
      .filter((sealed): sealed is string => sealed !== null)
      .map((sealed) => openCached(sealed, target.workspace_id, target.trigger_id));
    const scheme = target.signature_scheme;
    const verified = verifyDelivery(scheme, headers, body, secrets, Math.floor(now() / 1000));
    if (verified === null) {
      // Unverified: anyone may send it, so only its size, hash and first bytes are kept (review H-3).
      const { id } = await record({
        body: body.subarray(0, LIMITS.webhook.intake.unverifiedBodyBytes),
        ...digest,
        statusCode: INTAKE_STATUS.signature_invalid,
        reason: 'signature_invalid',
      });
      return { kind: 'signature_invalid', body: { delivery_id: id, reason: 'signature_invalid' } };
    }
    const { signedT } = verified;
    // The (t, body) replay guard, for schemes whose signature leaves the delivery's id out; where the
    // id is signed, the id names the message and the idempotency key alone answers a repeat.
    const guardT = verified.idSigned ? null : signedT;
    const challenge = slackChallenge(scheme, body);
    if (challenge !== undefined) {
      // Slack's URL verification: answered with its challenge, recorded, dispatching nothing.
      await record({
        body,
        ...digest,
        statusCode: INTAKE_STATUS.url_verification,
        reason: 'url_verification',
        signedT,
      });
      return { kind: 'challenge', body: { challenge } };
    }
    const key = deliveryKey(scheme, headers, body);
    if (key !== undefined && !PRINTABLE_KEY.test(key)) {
      const { id } = await record({
        body,
        ...digest,
        statusCode: INTAKE_STATUS.idempotency_key_invalid,
        reason: 'idempotency_key_invalid',
      });
      return { kind: 'idempotency_key_invalid', body: { delivery_id: id, reason: 'idempotency_key_invalid' } };
    }

    const trigger = await intakeConfig(target);
    if (!trigger) throw new NotFoundError({ error: 'trigger_not_found', slug });
    // Off the event loop, under a time and memory budget: a hostile filter ends as `error`.
    const filter = trigger.filterExpression
      ? await deps.filters.evaluate(trigger.filterExpression, {
          headers,
          body,
          contentType: headers['content-type'],
          trigger: { id: trigger.id, slug: trigger.slug },
          workspaceId: trigger.workspaceId,
        })
      : { result: null, error: null };
    if (trigger.filterExpression) await watchFilter(trigger, filter.error);
    const matched = filter.result === null || filter.result === 'matched';
    const accepted = { body, ...digest, statusCode: INTAKE_STATUS.accepted, reason: null };
    if (!key && !matched) {
      const recorded = await record({
        ...accepted,
        signedT: guardT,
        filterResult: filter.result,
        filterError: filter.error,
      });
      // The same signed request again (review L-4): its original answers.
      if (!recorded.duplicate_of) return { kind: 'accepted', body: { delivery_id: recorded.id } };
      const answer: IntakeAccepted = { delivery_id: recorded.duplicate_of };
      if (recorded.execution_id) answer.execution_id = recorded.execution_id;
      return { kind: 'accepted', body: answer };
    }

    // As the trigger's user, so the credential check inside can see its key (RLS on api_keys).
    const scope = { workspaceId: target.workspace_id, userId: trigger.principal.userId };
    const outcome = await uow(scope, async (m) => {
      const base: repo.NewDelivery = {
        ...accepted,
        workspaceId: trigger.workspaceId,
        triggerId: trigger.id,
        headers: pairs,
        idempotencyKey: key ?? null,
      };
      const withFilter = { ...base, signedT: guardT, filterResult: filter.result, filterError: filter.error };
      const deliveryId = await repo.insertOriginal(m, withFilter);
      if (!deliveryId) {
        // A duplicate key, or the same signed request (`t` and body) under any key or none (review
        // L-4): the earlier delivery answers, nothing is dispatched, this request is still recorded.
        const match = { idempotencyKey: key ?? null, signedT: guardT, bodySha256: digest.bodySha256 };
        const original = (await repo.findOriginal(m, trigger.id, match))!;
        await repo.insertDelivery(m, { ...base, reason: 'duplicate', duplicateOf: original.id });
        const answer: IntakeAccepted = { delivery_id: original.id };
        if (original.execution_id) answer.execution_id = original.execution_id;
        return { answer, dispatched: false };
      }
      if (!matched) return { answer: { delivery_id: deliveryId }, dispatched: false };
      const runKey = key ? `webhook:${trigger.id}:${key}` : `webhook:${trigger.id}:delivery:${deliveryId}`;
      const parsed = parseBodyForFilter(body, headers['content-type']);
      const run = await dispatch(m, trigger, { headers, body: parsed }, runKey, () =>
        storedPrincipalLive(m, trigger.workspaceId, trigger.principal),
      );
      await repo.setDeliveryOutcome(m, deliveryId, { executionId: run.executionId, reason: run.refusal });
      const answer: IntakeAccepted = { delivery_id: deliveryId };
      if (run.executionId) answer.execution_id = run.executionId;
      return { answer, dispatched: run.executionId !== null };
    });
    if (outcome.dispatched) runs.kick(target.workspace_id);
    return { kind: 'accepted', body: outcome.answer };
  }

  return { receive };
}

export type TriggerIntake = ReturnType<typeof createTriggerIntake>;
