import type { EntityManager } from 'typeorm';
import type { UnitOfWork } from '../db/unit-of-work';
import type { Logger } from '../logger';
import type { OutboxMessage } from './repository';
import {
  insertOutboxEvent,
  markDelivered,
  markFailed,
  undeliveredEvents,
  workspacesWithUndeliveredEvents,
} from './repository';

export type { OutboxMessage } from './repository';

/**
 * Reacts to one committed event, typically by starting or signalling a workflow whose id is
 * derived from the event (`resolve-<node_id>`, `embed-queue-<workspace_id>` with the event id in
 * the signal), so that delivering the same event twice has the effect of delivering it once.
 */
export type OutboxHandler = (event: OutboxMessage) => Promise<void>;

/** Writes an event in the caller's transaction; it leaves only if that transaction commits. */
export const enqueueOutboxEvent = (
  m: EntityManager,
  event: { workspaceId: string; eventType: string; aggregateId: string; payload?: Record<string, unknown> },
): Promise<void> => insertOutboxEvent(m, event);

const BATCH = 200;

/**
 * Delivers outbox rows to their handlers. Rows are read in one transaction, handled outside it
 * (no network calls inside a transaction), then marked dispatched; a crash in between only means
 * redelivery, which handlers absorb because they are idempotent.
 */
export function createOutboxRelay(deps: {
  uow: UnitOfWork;
  handlers: Readonly<Record<string, readonly OutboxHandler[]>>;
  logger: Logger;
}) {
  const { uow, handlers, logger } = deps;

  async function dispatchWorkspace(workspaceId: string, minAgeSeconds = 0): Promise<number> {
    const rows = await uow({ workspaceId }, (m) => undeliveredEvents(m, { minAgeSeconds, limit: BATCH }));
    let dispatched = 0;
    for (const row of rows) {
      try {
        for (const handle of handlers[row.event_type] ?? []) await handle(row);
        await uow({ workspaceId }, (m) => markDelivered(m, row.id));
        dispatched += 1;
      } catch (error) {
        logger.warn(
          { err: error, outbox_id: row.id, event_type: row.event_type },
          'outbox delivery failed; will retry',
        );
        await uow({ workspaceId }, (m) =>
          markFailed(m, row.id, String(error instanceof Error ? error.message : error)),
        );
      }
    }
    return dispatched;
  }

  /** Passes until one comes back short of a full batch: a burst larger than a batch goes out at once. */
  async function drainWorkspace(workspaceId: string, minAgeSeconds = 0): Promise<number> {
    let total = 0;
    for (;;) {
      const dispatched = await dispatchWorkspace(workspaceId, minAgeSeconds);
      total += dispatched;
      if (dispatched < BATCH) return total;
    }
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
    dispatchWorkspace,

    /**
     * The fast path: call after a transaction that enqueued events has committed. Returns at once;
     * delivery happens in the background, and the scheduled sweep catches whatever this misses.
     */
    kick,

    /** Every workspace with rows older than `minAgeSeconds`: the safety net behind the fast path. */
    async sweep(minAgeSeconds: number): Promise<{ workspaces: number; dispatched: number }> {
      const pending = await uow({}, (m) => workspacesWithUndeliveredEvents(m, minAgeSeconds));
      let dispatched = 0;
      for (const workspaceId of pending) {
        dispatched += await drainWorkspace(workspaceId, minAgeSeconds);
      }
      return { workspaces: pending.length, dispatched };
    },
  };
}

export type OutboxRelay = ReturnType<typeof createOutboxRelay>;
