import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { LIMITS } from '../limits';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { ScopeName } from '../platform/auth/scopes';
import { iso } from '../platform/dates';
import type { ScopedRead, Statement, UnitOfWork } from '../platform/db/unit-of-work';
import { ConflictError, DomainError, ForbiddenError, NotFoundError, ValidationFailedError } from '../platform/errors';
import type { Logger } from '../platform/logger';
import type { Sealer } from '../prompt/sealed';
import type { DispatchRunRequest, RunTemplate } from '../runs/schemas';
import type { RunService } from '../runs/service';
import type { TriggerPrincipal, WebhookDelivery, WebhookTrigger } from './entities';
import { filterSyntaxError, parseBodyForFilter } from './filter';
import type { FilterPool } from './filter-pool';
import { headerRecord, pairsOf } from './headers';
import { createLru } from './intake-cache';
import type { IntakeLimiter } from './intake-limiter';
import * as repo from './repository';
import type {
  CreateTriggerRequest,
  DeliveryDetail,
  DeliverySummary,
  IntakeAccepted,
  TriggerRow,
  UpdateTriggerRequest,
} from './schemas';
import { verifiedAt } from './signature';

type Manager = EntityManager;

/** The HTTP status each intake outcome answers with; delivery records keep it as `status_code`. */
export const INTAKE_STATUS = {
  accepted: 202,
  idempotency_key_invalid: 400,
  signature_invalid: 401,
  body_too_large: 413,
} as const;

export type IntakeOutcome =
  | { kind: 'accepted'; body: IntakeAccepted }
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

const newSecret = () => `whsec_${randomBytes(32).toString('hex')}`;
const sha256Hex = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

// RFC 4648's base32 alphabet in lower case: 32 symbols, so each random byte's low 5 bits pick one evenly.
const SUFFIX_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
/**
 * Review L-12: a trigger's slug is the name asked for plus a random suffix (10 characters, 50 bits),
 * so a slug can be neither guessed nor probed for, and no workspace learns another's slugs by
 * meeting them on create.
 */
const withSuffix = (slug: string) =>
  `${slug}-${[...randomBytes(10)].map((byte) => SUFFIX_ALPHABET[byte & 31]).join('')}`;

const triggerRow = (trigger: WebhookTrigger): TriggerRow => ({
  id: trigger.id,
  slug: trigger.slug,
  enabled: trigger.enabled,
  event_filter: trigger.filterExpression ? { expression: trigger.filterExpression } : null,
  run: trigger.runTemplate,
  previous_secret_expires_at: iso(trigger.previousSecretExpiresAt),
  rate_limited: { count: Number(trigger.rateLimitedCount), last_at: iso(trigger.rateLimitedAt) },
  created_at: trigger.createdAt.toISOString(),
  updated_at: trigger.updatedAt.toISOString(),
});

const summaryOf = (row: {
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

const detailOf = (d: WebhookDelivery): DeliveryDetail => ({
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

/**
 * The caller as a trigger's runs will act as it: user, scopes and credential, frozen now, with the
 * credential's expiry (review M-4): past it the trigger dispatches nothing, which also holds after a
 * revoked JWT's row is purged (rows go only once their token has expired).
 */
const freeze = (principal: Principal): TriggerPrincipal => {
  const { expiresAt } = principal.credential;
  return {
    userId: principal.userId,
    tenantId: principal.tenantId,
    scopes: [...principal.scopes],
    credential: {
      kind: principal.credential.kind,
      id: principal.credential.id,
      ...(expiresAt === undefined ? {} : { expiresAt: expiresAt?.toISOString() ?? null }),
    },
  };
};

/** What dispatching needs of a trigger. */
type Dispatchable = Pick<WebhookTrigger, 'id' | 'workspaceId' | 'runTemplate' | 'principal'>;

/** The credential a trigger's runs act as: its creator's, frozen at creation. */
const runPrincipal = (trigger: Dispatchable): Principal => ({
  userId: trigger.principal.userId,
  workspaceId: trigger.workspaceId,
  tenantId: trigger.principal.tenantId,
  scopes: new Set(trigger.principal.scopes as ScopeName[]),
  credential: {
    ...trigger.principal.credential,
    expiresAt: trigger.principal.credential.expiresAt ? new Date(trigger.principal.credential.expiresAt) : null,
  } as Principal['credential'],
});

/**
 * Webhook triggers (issue 13, contract 4.6): management under `triggers:manage`, and the signed
 * intake. The intake resolves its slug through the one definer function, verifies before it reads
 * anything else of the trigger, then records and dispatches in one transaction under the trigger's
 * workspace, so a delivery and its run commit together and concurrent requests with one key meet
 * on a unique index.
 */
export function createTriggerService(deps: {
  uow: UnitOfWork;
  /** One-statement reads: the verified trigger, when the intake's cached copy is not current. */
  read: ScopedRead;
  /** Pooled single statements, outside any transaction: the slug lookup and the one-statement records. */
  statement: Statement;
  /** Seals secrets at rest (WEFT_ENCRYPTION_KEY, a key derived for this purpose). */
  sealer: Sealer;
  runs: Pick<RunService, 'validate' | 'dispatchWithin' | 'kick'>;
  /** Evaluates filters in worker threads under a time and memory budget. */
  filters: FilterPool;
  /** The intake's per-source and per-slug limits, and redelivery's per trigger. */
  limiter: IntakeLimiter;
  logger: Logger;
  /** Tests move the clock to check the skew window. */
  now?: () => number;
}) {
  const { uow, sealer, runs, logger } = deps;
  const now = deps.now ?? Date.now;
  const seal = (secret: string, workspaceId: string, triggerId: string) =>
    sealer.seal(secret, { workspaceId, correlationId: triggerId }).sealed;
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

  function checkFilter(expression: string | undefined) {
    if (expression === undefined) return;
    const error = filterSyntaxError(expression);
    if (error) {
      throw new ValidationFailedError([{ loc: ['body', 'event_filter', 'expression'], msg: error, type: 'jmespath' }]);
    }
  }

  /** The template as `POST /v1/runs` checks it, with the credential the runs will act as. */
  function checkTemplate(principal: Pick<Principal, 'scopes'>, template: RunTemplate) {
    try {
      runs.validate(principal, template);
    } catch (error) {
      // Located under `run`, where the trigger's body carries the template.
      if (error instanceof ValidationFailedError) {
        const issues = (error.detail as { loc: (string | number)[]; msg: string; type: string }[]).map((issue) => ({
          ...issue,
          loc: ['body', 'run', ...issue.loc.slice(1)],
        }));
        throw new ValidationFailedError(issues);
      }
      throw error;
    }
  }

  /**
   * A trigger dispatches runs as whoever last changed what or when it dispatches, so those changes
   * need the scope a dispatch needs: `triggers:manage` alone must not let a caller start runs.
   */
  function checkMayDispatch(principal: Pick<Principal, 'scopes'>) {
    if (!principal.scopes.has('runs:write')) {
      throw new ForbiddenError(
        'Missing scope runs:write: a trigger dispatches runs, so creating one, enabling it, changing its ' +
          'filter or run, rotating its secret or redelivering needs runs:write as well as triggers:manage',
      );
    }
  }

  async function mustFind(m: Manager, id: string): Promise<WebhookTrigger> {
    const trigger = await repo.findTrigger(m, id);
    if (!trigger) throw new NotFoundError({ error: 'trigger_not_found', id });
    return trigger;
  }

  /** Dispatches the trigger's template with the event; null when the run could not be dispatched. */
  async function dispatch(
    m: Manager,
    trigger: Dispatchable,
    event: { headers: Record<string, string>; body: unknown },
    idempotencyKey: string,
    credentialUsable: () => Promise<boolean>,
  ): Promise<{ executionId: string | null; refusal: string | null }> {
    // The stored credential is what the runs act as: revoked, expired or no longer a member, it starts nothing.
    if (!(await credentialUsable())) {
      logger.warn({ trigger_id: trigger.id }, 'webhook delivery accepted but its trigger’s credential is revoked');
      return { executionId: null, refusal: 'dispatch_refused: credential_revoked' };
    }
    const principal = runPrincipal(trigger);
    const template = trigger.runTemplate;
    try {
      // Checked again: a tool or the creator's scopes may have changed since the trigger was saved.
      runs.validate(principal, template);
      // The event rides in the run's input beside the template's own fields (the steps read theirs).
      const request = { ...template, input: { ...template.input, event }, idempotency_key: idempotencyKey };
      // In a savepoint: whatever fails in there (a refusal, or a statement Postgres rejects, such as
      // an event holding a NUL character that jsonb cannot store) undoes the run alone, and the
      // delivery record still commits with the reason.
      const run = await m.transaction((inner) =>
        runs.dispatchWithin(inner, principal, request as unknown as DispatchRunRequest),
      );
      return { executionId: run.execution_id, refusal: null };
    } catch (error) {
      if (error instanceof DomainError) {
        logger.warn({ err: error, trigger_id: trigger.id }, 'webhook delivery accepted but its run was refused');
        return { executionId: null, refusal: `dispatch_refused: ${error.message}`.slice(0, 500) };
      }
      logger.error({ err: error, trigger_id: trigger.id }, 'webhook delivery accepted but its run failed to dispatch');
      return { executionId: null, refusal: 'dispatch_refused: dispatch_failed' };
    }
  }

  return {
    async create(principal: Principal, body: CreateTriggerRequest): Promise<TriggerRow & { secret: string }> {
      checkMayDispatch(principal);
      checkFilter(body.event_filter?.expression);
      checkTemplate(principal, body.run);
      const id = randomUUID();
      const secret = newSecret();
      const frozen = freeze(principal);
      return uow(scopeOf(principal), async (m) => {
        // 50 random bits: a second try is for the books; a third failure would mean a broken generator.
        for (let attempt = 0; attempt < 3; attempt++) {
          const inserted = await repo.insertTrigger(m, {
            id,
            workspaceId: principal.workspaceId,
            slug: withSuffix(body.slug),
            enabled: body.enabled,
            secretSealed: seal(secret, principal.workspaceId, id),
            filterExpression: body.event_filter?.expression ?? null,
            runTemplate: body.run,
            principal: frozen,
            createdBy: principal.userId,
          });
          if (inserted) return { ...triggerRow(await mustFind(m, id)), secret };
        }
        throw new Error('No free slug after three random suffixes');
      });
    },

    list: (principal: Principal): Promise<TriggerRow[]> =>
      uow(scopeOf(principal), async (m) => (await repo.listTriggers(m)).map(triggerRow)),

    get: (principal: Principal, id: string): Promise<TriggerRow> =>
      uow(scopeOf(principal), async (m) => triggerRow(await mustFind(m, id))),

    async update(
      principal: Principal,
      id: string,
      body: UpdateTriggerRequest,
    ): Promise<TriggerRow & { secret?: string }> {
      // Changing what runs or when (the run, the filter, enabling), or who can make it run (the
      // secret), makes the caller the trigger's run identity. Disabling only stops dispatch: it stays
      // with triggers:manage, so a narrow credential can still halt a trigger.
      const takesOver =
        body.run !== undefined ||
        body.rotate_secret === true ||
        body.enabled === true ||
        body.event_filter !== undefined;
      if (takesOver) checkMayDispatch(principal);
      checkFilter(body.event_filter?.expression);
      if (body.run) checkTemplate(principal, body.run);
      return uow(scopeOf(principal), async (m) => {
        const current = await mustFind(m, id);
        // The kept template is checked against the caller's scopes too: they are what its runs will have.
        if (takesOver && !body.run) checkTemplate(principal, current.runTemplate);
        const secret = body.rotate_secret ? newSecret() : undefined;
        await repo.updateTrigger(m, id, {
          enabled: body.enabled,
          filterExpression: body.event_filter === undefined ? undefined : (body.event_filter?.expression ?? null),
          runTemplate: body.run,
          principal: takesOver ? freeze(principal) : undefined,
          rotation: secret
            ? { secretSealed: seal(secret, principal.workspaceId, id), graceHours: LIMITS.webhook.rotationGraceHours }
            : undefined,
        });
        const row = triggerRow(await mustFind(m, id));
        return secret ? { ...row, secret } : row;
      });
    },

    async remove(principal: Principal, id: string): Promise<TriggerRow> {
      return uow(scopeOf(principal), async (m) => {
        const row = triggerRow(await mustFind(m, id));
        await repo.deleteTrigger(m, id);
        return row;
      });
    },

    async deliveries(principal: Principal, id: string, query: { limit: number; cursor?: string }) {
      return uow(scopeOf(principal), async (m) => {
        await mustFind(m, id);
        return (await repo.listDeliveries(m, id, query.limit, query.cursor)).map(summaryOf);
      });
    },

    delivery: (principal: Principal, id: string, deliveryId: string): Promise<DeliveryDetail> =>
      uow(scopeOf(principal), async (m) => {
        await mustFind(m, id);
        const found = await repo.findDelivery(m, id, deliveryId);
        if (!found) throw new NotFoundError({ error: 'delivery_not_found', delivery_id: deliveryId });
        return detailOf(found);
      }),

    /**
     * Dispatches a recorded, verified delivery again as a new delivery record (`redelivery_of`),
     * with a fresh idempotency key, as GitHub's "redeliver" does. The filter is not consulted:
     * redelivering is an operator's explicit choice.
     */
    async redeliver(principal: Principal, id: string, deliveryId: string) {
      // A redelivery dispatches a run: it needs runs:write, and the caller becomes the trigger's identity.
      checkMayDispatch(principal);
      const response = await uow(scopeOf(principal), async (m) => {
        const current = await mustFind(m, id);
        // Counted only for a trigger the caller can see, so another workspace cannot spend its budget.
        await deps.limiter.admitRedelivery(current.id);
        checkTemplate(principal, current.runTemplate);
        const trigger = { ...current, principal: freeze(principal) };
        await repo.updateTrigger(m, id, { principal: trigger.principal });
        const original = await repo.findDelivery(m, id, deliveryId);
        if (!original) throw new NotFoundError({ error: 'delivery_not_found', delivery_id: deliveryId });
        if (original.statusCode !== INTAKE_STATUS.accepted || !original.body) {
          throw new ConflictError({
            error: 'delivery_not_verified',
            message: `Only an accepted delivery can be redelivered; this one was answered ${original.statusCode}`,
          });
        }
        const newId = randomUUID();
        const headers = headerRecord(original.headers);
        const event = { headers, body: parseBodyForFilter(original.body, headers['content-type']) };
        const outcome = await dispatch(m, trigger, event, `webhook:${trigger.id}:redelivery:${newId}`, async () => {
          // Read as the trigger's user (RLS shows a user their own keys), not as the caller.
          const scope = { workspaceId: trigger.workspaceId, userId: trigger.principal.userId };
          const params = repo.credentialParams(trigger.workspaceId, trigger.principal);
          const [row] = await deps.read<{ usable: boolean }>(scope, repo.CREDENTIAL_USABLE_SQL, params);
          return row?.usable === true;
        });
        if (!outcome.executionId) {
          throw new ConflictError({ error: 'dispatch_refused', message: outcome.refusal ?? 'The run was refused' });
        }
        await repo.insertDelivery(m, {
          workspaceId: trigger.workspaceId,
          triggerId: trigger.id,
          headers: original.headers,
          body: original.body,
          statusCode: INTAKE_STATUS.accepted,
          reason: 'redelivered',
          idempotencyKey: original.idempotencyKey,
          executionId: outcome.executionId,
          redeliveryOf: original.id,
          id: newId,
          bodySize: original.bodySize,
          bodySha256: original.bodySha256,
        });
        return { delivery_id: newId, execution_id: outcome.executionId };
      });
      runs.kick(principal.workspaceId);
      return response;
    },

    /**
     * Contract 4.6: the intake. Unknown or disabled slug → NotFoundError, recording nothing. The
     * common outcomes (refusals; an unkeyed delivery that dispatches nothing) are two round trips,
     * the slug lookup and the record, once the trigger's configuration is cached at its current
     * revision; a key or a dispatch takes one transaction for the record and the run together.
     */
    async receive(slug: string, request: InboundRequest): Promise<IntakeOutcome> {
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
      const signedT = verifiedAt(headers['x-service-signature'], body, secrets, Math.floor(now() / 1000));
      if (signedT === null) {
        // Unverified: anyone may send it, so only its size, hash and first bytes are kept (review H-3).
        const { id } = await record({
          body: body.subarray(0, LIMITS.webhook.intake.unverifiedBodyBytes),
          ...digest,
          statusCode: INTAKE_STATUS.signature_invalid,
          reason: 'signature_invalid',
        });
        return { kind: 'signature_invalid', body: { delivery_id: id, reason: 'signature_invalid' } };
      }
      const key = headers['x-service-idempotency-key'];
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
          })
        : { result: null, error: null };
      const matched = filter.result === null || filter.result === 'matched';
      const accepted = { body, ...digest, statusCode: INTAKE_STATUS.accepted, reason: null };
      if (!key && !matched) {
        const recorded = await record({ ...accepted, signedT, filterResult: filter.result, filterError: filter.error });
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
        const withFilter = { ...base, signedT, filterResult: filter.result, filterError: filter.error };
        const deliveryId = await repo.insertOriginal(m, withFilter);
        if (!deliveryId) {
          // A duplicate key, or the same signed request (`t` and body) under any key or none (review
          // L-4): the earlier delivery answers, nothing is dispatched, this request is still recorded.
          const match = { idempotencyKey: key ?? null, signedT, bodySha256: digest.bodySha256 };
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
          repo.credentialUsable(m, trigger.workspaceId, trigger.principal),
        );
        await repo.setDeliveryOutcome(m, deliveryId, { executionId: run.executionId, reason: run.refusal });
        const answer: IntakeAccepted = { delivery_id: deliveryId };
        if (run.executionId) answer.execution_id = run.executionId;
        return { answer, dispatched: run.executionId !== null };
      });
      if (outcome.dispatched) runs.kick(target.workspace_id);
      return { kind: 'accepted', body: outcome.answer };
    },
  };
}

export type TriggerService = ReturnType<typeof createTriggerService>;
