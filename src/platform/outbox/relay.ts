import type { EntityManager } from 'typeorm';
import { LIMITS } from '../../rules/limits';
import type { UnitOfWork } from '../db/unit-of-work';
import { isRetryableRefusal } from '../errors';
import type { Logger } from '../logger';
import { isTransient } from '../transient';
import type { EventContract, EventInput, EventPayload } from './event';
import type { OutboxMessage } from './repository';
import {
  deadLetterCount,
  dueEvents,
  insertOutboxEvent,
  markDeadLetter,
  markDelivered,
  markDeliveredByAggregate,
  markFailed,
  purgeDeliveredEvents,
  releaseFailedEvents,
  workspacesWithDueEvents,
} from './repository';

export type { OutboxMessage } from './repository';

/** Postgres or Temporal unavailable, or a handler's "not now": retried until delivered, never dead-lettered. */
const isTransientFailure = (error: unknown) => isTransient(error) || isRetryableRefusal(error);

/**
 * Reacts to one committed event of its contract, with the payload the relay parsed, typically by
 * starting or signalling a workflow whose id is derived from the event (`resolve-<node_id>`,
 * `embed-queue-<workspace_id>` with the event id in the signal), so that delivering the same event
 * twice has the effect of delivering it once.
 */
export interface OutboxHandler<E extends EventContract = EventContract> {
  readonly contract: E;
  // Method syntax: a list of handlers of different contracts is one `OutboxHandler[]`.
  handle(event: OutboxMessage<EventPayload<E>>): Promise<void>;
}

/** A handler of one contract, its payload typed by the contract. */
export const onEvent = <E extends EventContract>(
  contract: E,
  handle: (event: OutboxMessage<EventPayload<E>>) => Promise<void>,
): OutboxHandler<E> => ({ contract, handle });

/**
 * Writes an event of a contract in the caller's transaction; it leaves only if that transaction
 * commits, and not before `delaySeconds`. The payload is typed by the contract here and parsed by
 * it when the relay reads the row.
 */
export const enqueueEvent = <E extends EventContract>(
  m: EntityManager,
  contract: E,
  event: { workspaceId: string; aggregateId: string; payload: EventInput<E>; delaySeconds?: number },
): Promise<void> =>
  insertOutboxEvent(m, {
    workspaceId: event.workspaceId,
    eventType: contract.name,
    aggregateId: event.aggregateId,
    payload: event.payload as Record<string, unknown>,
    delaySeconds: event.delaySeconds,
  });

/** Why a row cannot be delivered at all: no contract of its type, or a payload its contract refuses. */
function undeliverable(contract: EventContract | undefined, row: OutboxMessage): string | { payload: unknown } {
  if (!contract) return `unknown event type: ${row.event_type}`;
  const parsed = contract.payload.safeParse(row.payload);
  if (parsed.success) return { payload: parsed.data };
  const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(payload)'}: ${issue.message}`);
  return `malformed payload for ${contract.name} v${contract.version}: ${issues.join('; ')}`;
}

/** How delivery retries, gives up and cleans up (LIMITS.outbox unless overridden). */
export type OutboxPolicy = { [Key in keyof typeof LIMITS.outbox]: number };

export interface DrainResult {
  dispatched: number;
  failed: number;
  /** Rows that failed their last allowed attempt in this pass. */
  deadLettered: number;
}

export interface SweepResult {
  workspaces: number;
  dispatched: number;
  deadLettered: number;
  purged: number;
  /** Dead letters waiting for an operator, in every workspace (`weft outbox dead-letters`). */
  deadLetters: number;
}

/**
 * Delivers outbox rows to their handlers. Rows are read in one transaction, handled outside it
 * (no network calls inside a transaction), then marked dispatched; a crash in between only means
 * redelivery, which handlers absorb because they are idempotent. A failed row backs off
 * exponentially (capped); one that keeps failing for a permanent reason is dead-lettered after
 * `maxAttempts` (logged, and counted in the sweep's result), one failing because Postgres or
 * Temporal is unavailable is retried until delivered; each pass walks a workspace's backlog in id
 * order, so failing rows never starve newer ones.
 */
export function createOutboxRelay(deps: {
  uow: UnitOfWork;
  /** Handlers in delivery order; an event's handlers run one after the other. */
  handlers: readonly OutboxHandler[];
  /**
   * Every contract written, handled or not (a row nothing handles is delivered as read); the
   * handlers' contracts are added. A row of any other type is a dead letter.
   */
  events?: readonly EventContract[];
  logger: Logger;
  /** Overrides of LIMITS.outbox (tests shorten the backoff). */
  policy?: Partial<OutboxPolicy>;
  /**
   * Whether Temporal answers (a cheap call with a short deadline). With it, rows that failed while
   * Temporal was unreachable are retried as soon as it answers again, not after their backoff.
   */
  temporalAnswers?: () => Promise<boolean>;
}) {
  const { uow, logger } = deps;
  const policy: OutboxPolicy = { ...LIMITS.outbox, ...deps.policy };
  const contracts = new Map<string, EventContract>();
  for (const contract of [...(deps.events ?? []), ...deps.handlers.map((handler) => handler.contract)]) {
    const known = contracts.get(contract.name);
    if (known && known !== contract) throw new Error(`Two outbox event contracts are named ${contract.name}`);
    contracts.set(contract.name, contract);
  }
  const handlers = new Map<string, OutboxHandler[]>();
  for (const handler of deps.handlers) {
    handlers.set(handler.contract.name, [...(handlers.get(handler.contract.name) ?? []), handler]);
  }

  async function deliver(workspaceId: string, row: OutboxMessage): Promise<'dispatched' | 'failed' | 'dead'> {
    const parsed = undeliverable(contracts.get(row.event_type), row);
    if (typeof parsed === 'string') {
      // Never a crash and never a retry: no later attempt would read the row differently.
      await uow({ workspaceId }, (m) => markDeadLetter(m, { id: row.id, error: parsed }));
      logger.error(
        { outbox_id: row.id, event_type: row.event_type, workspace_id: workspaceId, reason: parsed },
        'outbox event dead-lettered: it cannot be delivered',
      );
      return 'dead';
    }
    try {
      const event = { ...row, payload: parsed.payload };
      for (const handler of handlers.get(row.event_type) ?? []) await handler.handle(event);
    } catch (error) {
      const permanent = !isTransientFailure(error);
      const dead = await uow({ workspaceId }, (m) =>
        markFailed(m, {
          id: row.id,
          error: String(error instanceof Error ? error.message : error),
          maxAttempts: policy.maxAttempts,
          baseSeconds: policy.retryBaseSeconds,
          maxSeconds: permanent ? policy.retryMaxSeconds : policy.transientRetryMaxSeconds,
          permanent,
        }),
      );
      if (!permanent) watchTemporal(workspaceId);
      const context = { err: error, outbox_id: row.id, event_type: row.event_type, workspace_id: workspaceId };
      if (dead) logger.error(context, 'outbox event dead-lettered after its last attempt');
      else logger.warn(context, 'outbox delivery failed; will retry');
      return dead ? 'dead' : 'failed';
    }
    await uow({ workspaceId }, (m) => markDelivered(m, row.id));
    return 'dispatched';
  }

  /** One pass over the workspace's due rows, in id order, each row attempted at most once. */
  async function drainWorkspace(workspaceId: string, minAgeSeconds = 0): Promise<DrainResult> {
    const result: DrainResult = { dispatched: 0, failed: 0, deadLettered: 0 };
    let after = '0';
    for (;;) {
      const rows = await uow({ workspaceId }, (m) => dueEvents(m, { after, minAgeSeconds, limit: policy.batch }));
      for (const row of rows) {
        const outcome = await deliver(workspaceId, row);
        if (outcome === 'dispatched') result.dispatched += 1;
        else if (outcome === 'failed') result.failed += 1;
        else result.deadLettered += 1;
      }
      const last = rows.at(-1);
      if (!last || rows.length < policy.batch) return result;
      after = last.id;
    }
  }

  // Workspaces whose rows failed transiently since the watch began; one watch at a time.
  const stalled = new Set<string>();
  let watching = false;
  const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

  /**
   * After a transient failure: if Temporal does not answer, asks again every `temporalProbeMs`
   * until it does, then makes the stalled workspaces' failed rows due and delivers them (issue 44
   * item 6: a run dispatched during a long outage would otherwise wait up to a minute of backoff
   * after Temporal's return). A failure while Temporal answers was Postgres's: the backoff stays.
   */
  function watchTemporal(workspaceId: string): void {
    const probe = deps.temporalAnswers;
    if (!probe) return;
    stalled.add(workspaceId);
    if (watching) return;
    watching = true;
    void (async () => {
      try {
        let wasDown = false;
        while (!(await probe())) {
          wasDown = true;
          await pause(policy.temporalProbeMs);
        }
        const workspaces = [...stalled];
        stalled.clear();
        if (!wasDown) return;
        logger.info({ workspaces: workspaces.length }, 'Temporal answers again; delivering the rows it held up');
        for (const id of workspaces) {
          await uow({ workspaceId: id }, (m) => releaseFailedEvents(m));
          kick(id);
        }
      } catch (error) {
        logger.warn({ err: error }, 'outbox rows held up by Temporal not released; their backoff or the sweep will');
      } finally {
        watching = false;
        // A failure noted after the snapshot starts the next watch (which ends at once if Temporal answers).
        const next = stalled.values().next();
        if (!next.done) watchTemporal(next.value);
      }
    })();
  }

  // One delivery loop per workspace at a time; a kick during a loop asks for one more pass.
  const running = new Map<string, { again: boolean }>();

  function kick(workspaceId: string): void {
    const loop = running.get(workspaceId);
    if (loop) {
      loop.again = true;
      return;
    }
    const state = { again: false };
    running.set(workspaceId, state);
    void (async () => {
      try {
        do {
          state.again = false;
          await drainWorkspace(workspaceId);
        } while (state.again);
      } catch (error) {
        logger.warn({ err: error, workspace_id: workspaceId }, 'outbox fast path failed; the sweep will deliver');
      } finally {
        running.delete(workspaceId);
      }
    })();
  }

  return {
    drainWorkspace,

    /** Delivers every due row of the workspace; returns how many were delivered. */
    dispatchWorkspace: async (workspaceId: string, minAgeSeconds = 0): Promise<number> =>
      (await drainWorkspace(workspaceId, minAgeSeconds)).dispatched,

    /**
     * The fast path: call after a transaction that enqueued events has committed. Returns at once;
     * delivery happens in the background, and the scheduled sweep catches whatever this misses.
     */
    kick,

    /**
     * The writer did the handler's work itself right after its commit (a run's workflow started
     * from the API): marks the aggregate's events of that type delivered, so the relay does not
     * repeat it. Until then, and if this fails, the relay delivers them, which the idempotent
     * handler absorbs.
     */
    delivered: (workspaceId: string, contract: EventContract, aggregateId: string): Promise<void> =>
      uow({ workspaceId }, (m) => markDeliveredByAggregate(m, { eventType: contract.name, aggregateId })),

    /**
     * The safety net behind the fast path: every workspace with rows older than `minAgeSeconds`
     * that are due, then the purge of rows delivered longer ago than the retention.
     * `onProgress` is called between steps (the activity heartbeats there).
     */
    async sweep(minAgeSeconds: number, onProgress: () => void = () => {}): Promise<SweepResult> {
      const pending = await uow({}, (m) => workspacesWithDueEvents(m, minAgeSeconds));
      const result: SweepResult = {
        workspaces: pending.length,
        dispatched: 0,
        deadLettered: 0,
        purged: 0,
        deadLetters: 0,
      };
      for (const workspaceId of pending) {
        const drained = await drainWorkspace(workspaceId, minAgeSeconds);
        result.dispatched += drained.dispatched;
        result.deadLettered += drained.deadLettered;
        onProgress();
      }
      for (;;) {
        const purged = await uow({}, (m) =>
          purgeDeliveredEvents(m, { retentionDays: policy.retentionDays, limit: policy.purgeBatch }),
        );
        result.purged += purged;
        onProgress();
        if (purged < policy.purgeBatch) break;
      }
      result.deadLetters = await uow({}, (m) => deadLetterCount(m));
      if (result.deadLettered > 0 || result.deadLetters > 0) {
        // Repeated each pass while any remain: the alert an operator answers with the CLI.
        logger.error(
          { dead_lettered: result.deadLettered, dead_letters: result.deadLetters },
          'outbox dead letters wait for an operator (weft outbox dead-letters, weft outbox requeue)',
        );
      }
      return result;
    },
  };
}

export type OutboxRelay = ReturnType<typeof createOutboxRelay>;
