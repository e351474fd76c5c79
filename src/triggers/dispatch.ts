import type { EntityManager } from 'typeorm';
import { InsufficientCreditsError, insufficientCreditsReason } from '../credits/errors';
import type { Principal } from '../platform/auth/principal';
import { thaw } from '../platform/auth/stored-principal';
import { DomainError, RateLimitedError } from '../platform/errors';
import type { Logger } from '../platform/logger';
import type { DispatchRunRequest } from '../runs/schemas';
import type { RunService } from '../runs/service';
import type { WebhookTrigger } from './entities';

// What management (a redelivery) and the intake (a delivery) share: the identity a trigger's runs
// act as, and the dispatch of its run template with an event.

/** What dispatching needs of a trigger. */
export type Dispatchable = Pick<WebhookTrigger, 'id' | 'workspaceId' | 'runTemplate' | 'principal'>;

/**
 * The credential a trigger's runs act as: its creator's, frozen at creation with its expiry (review
 * M-4): past it the trigger dispatches nothing, which also holds after a revoked JWT's row is purged
 * (rows go only once their token has expired).
 */
export const runPrincipal = (trigger: Dispatchable): Principal => thaw(trigger.principal, trigger.workspaceId);

/**
 * The dispatch of a trigger's run template with an event, inside the caller's transaction: for the
 * intake's deliveries and management's redeliveries alike.
 */
export function createTriggerDispatch(deps: { runs: Pick<RunService, 'dispatchWithin'>; logger: Logger }) {
  const { runs, logger } = deps;
  /**
   * Dispatches the trigger's template with the event, checked again as a dispatch is (a tool, the
   * creator's scopes or the balance may have changed since the trigger was saved); null when the run
   * could not be dispatched.
   */
  return async function dispatch(
    m: EntityManager,
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
      // Issue 43 item 2: the template's `flow.rate_limit` is full; the delivery says so, and when it has room.
      if (error instanceof RateLimitedError) {
        logger.warn({ trigger_id: trigger.id }, 'webhook delivery accepted but its run is over its rate limit');
        return { executionId: null, refusal: `rate_limited: retry after ${error.retryAfterSeconds ?? 1} s` };
      }
      // Issue 43 item 4: the balance cannot pay the playbook's priced steps; nothing is dispatched.
      if (error instanceof InsufficientCreditsError) {
        logger.warn({ trigger_id: trigger.id }, 'webhook delivery accepted but the balance cannot pay its run');
        return { executionId: null, refusal: insufficientCreditsReason(error) };
      }
      if (error instanceof DomainError) {
        logger.warn({ err: error, trigger_id: trigger.id }, 'webhook delivery accepted but its run was refused');
        return { executionId: null, refusal: `dispatch_refused: ${error.message}`.slice(0, 500) };
      }
      logger.error({ err: error, trigger_id: trigger.id }, 'webhook delivery accepted but its run failed to dispatch');
      return { executionId: null, refusal: 'dispatch_refused: dispatch_failed' };
    }
  };
}

export type TriggerDispatch = ReturnType<typeof createTriggerDispatch>;
