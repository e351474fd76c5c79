import { randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { filterSyntaxError, parseBodyForFilter } from '../filters/filter';
import { storedPrincipalLive } from '../platform/auth/credential-liveness';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { freeze } from '../platform/auth/stored-principal';
import type { Sealer } from '../platform/crypto/sealer';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { ConflictError, ForbiddenError, NotFoundError, ValidationFailedError } from '../platform/errors';
import type { Logger } from '../platform/logger';
import { LIMITS } from '../rules/limits';
import type { RunTemplate } from '../runs/schemas';
import type { RunService } from '../runs/service';
import { createTriggerDispatch } from './dispatch';
import type { WebhookTrigger } from './entities';
import { headerRecord } from './headers';
import { INTAKE_STATUS } from './intake';
import type { IntakeLimiter } from './intake-limiter';
import * as repo from './repository';
import type {
  CreateTriggerRequest,
  DeliveryDetail,
  SignatureRequest,
  TriggerRow,
  UpdateTriggerRequest,
} from './schemas';
import type { SignatureScheme } from './schemes';
import { newSecret, secretProblem } from './schemes';
import { detailOf, summaryOf, triggerRow } from './views';

// RFC 4648's base32 alphabet in lower case: 32 symbols, so each random byte's low 5 bits pick one evenly.
const SUFFIX_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
/**
 * Review L-12: a trigger's slug is the name asked for plus a random suffix (10 characters, 50 bits),
 * so a slug can be neither guessed nor probed for, and no workspace learns another's slugs by
 * meeting them on create.
 */
const withSuffix = (slug: string) =>
  `${slug}-${[...randomBytes(10)].map((byte) => SUFFIX_ALPHABET[byte & 31]).join('')}`;

/**
 * Webhook triggers (issue 13, contract 4.6), management under `triggers:manage`: create, list, read,
 * change and delete triggers, read their deliveries and redeliver one. The signed intake that
 * receives deliveries is `intake.ts`.
 */
export function createTriggerService(deps: {
  uow: UnitOfWork;
  /** Seals secrets at rest (WEFT_ENCRYPTION_KEY, a key derived for this purpose). */
  sealer: Sealer;
  runs: Pick<RunService, 'validate' | 'dispatchWithin' | 'kick'>;
  /** Redelivery's limit per trigger. */
  limiter: IntakeLimiter;
  logger: Logger;
}) {
  const { uow, sealer, runs } = deps;
  const dispatch = createTriggerDispatch({ runs, logger: deps.logger });
  const seal = (secret: string, workspaceId: string, triggerId: string) =>
    sealer.seal(secret, { workspaceId, correlationId: triggerId }).sealed;

  function checkFilter(expression: string | undefined) {
    if (expression === undefined) return;
    const error = filterSyntaxError(expression);
    if (error) {
      throw new ValidationFailedError([{ loc: ['body', 'event_filter', 'expression'], msg: error, type: 'jmespath' }]);
    }
  }

  /** The template as `POST /v1/runs` checks it, with the credential the runs will act as. */
  async function checkTemplate(principal: Pick<Principal, 'scopes' | 'workspaceId'>, template: RunTemplate) {
    try {
      await runs.validate(principal, template);
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

  /** The secret a create or update sets: the one given (when it fits the scheme), else a fresh one. */
  function secretFor(scheme: SignatureScheme, signature: SignatureRequest | undefined): string {
    if (signature?.secret === undefined) return newSecret(scheme);
    const problem = secretProblem(scheme, signature.secret);
    if (problem)
      throw new ValidationFailedError([{ loc: ['body', 'signature', 'secret'], msg: problem, type: 'secret' }]);
    return signature.secret;
  }

  async function mustFind(m: EntityManager, id: string): Promise<WebhookTrigger> {
    const trigger = await repo.findTrigger(m, id);
    if (!trigger) throw new NotFoundError({ error: 'trigger_not_found', id });
    return trigger;
  }

  return {
    async create(principal: Principal, body: CreateTriggerRequest): Promise<TriggerRow & { secret: string }> {
      checkMayDispatch(principal);
      checkFilter(body.event_filter?.expression);
      await checkTemplate(principal, body.run);
      const id = randomUUID();
      const scheme = body.signature?.scheme ?? 'weft';
      const secret = secretFor(scheme, body.signature);
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
            signatureScheme: scheme,
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
        body.signature !== undefined ||
        body.enabled === true ||
        body.event_filter !== undefined;
      if (takesOver) checkMayDispatch(principal);
      checkFilter(body.event_filter?.expression);
      if (body.run) await checkTemplate(principal, body.run);
      return uow(scopeOf(principal), async (m) => {
        const current = await mustFind(m, id);
        // The kept template is checked against the caller's scopes too: they are what its runs will have.
        if (takesOver && !body.run) await checkTemplate(principal, current.runTemplate);
        const scheme = body.signature?.scheme ?? current.signatureScheme;
        // A new scheme needs a secret of its kind: given, or generated as a rotation would.
        const rotating =
          body.rotate_secret === true || body.signature?.secret !== undefined || scheme !== current.signatureScheme;
        const secret = rotating ? secretFor(scheme, body.signature) : undefined;
        await repo.updateTrigger(m, id, {
          enabled: body.enabled,
          filterExpression: body.event_filter === undefined ? undefined : (body.event_filter?.expression ?? null),
          runTemplate: body.run,
          principal: takesOver ? freeze(principal) : undefined,
          signatureScheme: body.signature?.scheme,
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
        await checkTemplate(principal, current.runTemplate);
        const trigger = { ...current, principal: freeze(principal) };
        await repo.updateTrigger(m, id, { principal: trigger.principal });
        const original = await repo.findDelivery(m, id, deliveryId);
        if (!original) throw new NotFoundError({ error: 'delivery_not_found', delivery_id: deliveryId });
        if (original.statusCode !== INTAKE_STATUS.accepted || !original.body) {
          throw new ConflictError({
            error: 'delivery_not_verified',
            message:
              original.statusCode === INTAKE_STATUS.accepted
                ? 'Past retention only this delivery’s hash is kept (its replay guard): its body is gone'
                : `Only an accepted delivery can be redelivered; this one was answered ${original.statusCode}`,
          });
        }
        const newId = randomUUID();
        const headers = headerRecord(original.headers);
        const event = { headers, body: parseBodyForFilter(original.body, headers['content-type']) };
        const outcome = await dispatch(
          m,
          trigger,
          event,
          `webhook:${trigger.id}:redelivery:${newId}`,
          // The caller is now the trigger's identity, and this transaction acts as that user (RLS on keys).
          () => storedPrincipalLive(m, trigger.workspaceId, trigger.principal),
        );
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
  };
}

export type TriggerService = ReturnType<typeof createTriggerService>;
