import type { DataSource, EntityManager } from 'typeorm';
import type { UnitOfWork } from '../db/unit-of-work';
import type { Logger } from '../logger';

export interface OutboxEvent {
  id: string;
  workspace_id: string;
  event_type: string;
  aggregate_id: string;
  payload: Record<string, unknown>;
}

/**
 * Reacts to one committed event, typically by starting a workflow whose id is derived from the
 * event (`embed-<node_id>`), so that delivering the same event twice starts it once.
 */
export type OutboxHandler = (event: OutboxEvent) => Promise<void>;

/** Writes an event in the caller's transaction; it leaves only if that transaction commits. */
export async function enqueueOutboxEvent(
  m: EntityManager,
  event: { workspaceId: string; eventType: string; aggregateId: string; payload?: Record<string, unknown> },
): Promise<void> {
  await m.query(`INSERT INTO outbox (workspace_id, event_type, aggregate_id, payload) VALUES ($1, $2, $3, $4)`, [
    event.workspaceId,
    event.eventType,
    event.aggregateId,
    JSON.stringify(event.payload ?? {}),
  ]);
}

const BATCH = 200;

/**
 * Delivers outbox rows to their handlers. Rows are read in one transaction, handled outside it
 * (no network calls inside a transaction), then marked dispatched; a crash in between only means
 * redelivery, which handlers absorb because they are idempotent.
 */
export function createOutboxRelay(deps: {
  dataSource: DataSource;
  uow: UnitOfWork;
  handlers: Readonly<Record<string, readonly OutboxHandler[]>>;
  logger: Logger;
}) {
  const { dataSource, uow, handlers, logger } = deps;

  async function dispatchWorkspace(workspaceId: string, minAgeSeconds = 0): Promise<number> {
    const rows: OutboxEvent[] = await uow({ workspaceId }, (m) =>
      m.query(
        `SELECT id::text, workspace_id, event_type, aggregate_id, payload FROM outbox
         WHERE dispatched_at IS NULL AND created_at <= now() - make_interval(secs => $1)
         ORDER BY id LIMIT $2`,
        [minAgeSeconds, BATCH],
      ),
    );
    let dispatched = 0;
    for (const row of rows) {
      try {
        for (const handle of handlers[row.event_type] ?? []) await handle(row);
        await uow({ workspaceId }, (m) =>
          m.query(`UPDATE outbox SET dispatched_at = now(), attempts = attempts + 1, last_error = NULL WHERE id = $1`, [
            row.id,
          ]),
        );
        dispatched += 1;
      } catch (error) {
        logger.warn(
          { err: error, outbox_id: row.id, event_type: row.event_type },
          'outbox delivery failed; will retry',
        );
        await uow({ workspaceId }, (m) =>
          m.query(`UPDATE outbox SET attempts = attempts + 1, last_error = $2 WHERE id = $1`, [
            row.id,
            String(error instanceof Error ? error.message : error).slice(0, 500),
          ]),
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
      const pending: { weft_outbox_pending_workspaces: string }[] = await dataSource.query(
        `SELECT weft_outbox_pending_workspaces(make_interval(secs => $1))`,
        [minAgeSeconds],
      );
      let dispatched = 0;
      for (const { weft_outbox_pending_workspaces: workspaceId } of pending) {
        dispatched += await drainWorkspace(workspaceId, minAgeSeconds);
      }
      return { workspaces: pending.length, dispatched };
    },
  };
}

export type OutboxRelay = ReturnType<typeof createOutboxRelay>;
