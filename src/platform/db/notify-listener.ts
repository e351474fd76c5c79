import { Client } from 'pg';
import type { Logger } from '../logger';

export interface NotifySubscriber {
  /** A notification's payload (the channel's writers decide its shape; ids only, never row data). */
  notify(payload: string): void;
  /** The connection was lost and is back: notifications may have been missed, read the table again. */
  resync(): void;
}

/**
 * ONE `LISTEN` connection per process for a channel, fanning each notification out in-process to
 * the subscribers under its key (the payload's first word: the run events' workspace id), so a
 * thousand followers cost one connection and no polling. The connection reads no rows: it sets no
 * workspace and sees only the ids a payload carries; subscribers read through the RLS-scoped path.
 * Connected on the first subscriber; a lost connection is reopened with backoff, and every
 * subscriber is then told to resync from the table, so nothing committed meanwhile is missed.
 */
export function createNotifyListener(deps: {
  connectionString: string;
  channel: string;
  logger: Logger;
  backoff?: { initialMs: number; maxMs: number };
}) {
  const { channel, logger } = deps;
  const backoff = deps.backoff ?? { initialMs: 100, maxMs: 5000 };
  const subscribers = new Map<string, Set<NotifySubscriber>>();
  let client: Client | null = null;
  let connecting: Promise<void> | null = null;
  let closed = false;
  let delayMs = backoff.initialMs;
  let retry: NodeJS.Timeout | undefined;

  const each = (visit: (subscriber: NotifySubscriber) => void) => {
    for (const set of subscribers.values()) for (const subscriber of set) visit(subscriber);
  };

  function scheduleReconnect(error: unknown) {
    if (closed || retry) return;
    logger.warn({ err: error, channel, retry_ms: delayMs }, 'notification listener lost; reconnecting');
    retry = setTimeout(() => {
      retry = undefined;
      void connect(true);
    }, delayMs);
    delayMs = Math.min(delayMs * 2, backoff.maxMs);
  }

  function connect(resync: boolean): Promise<void> {
    if (closed) return Promise.resolve();
    connecting = (async () => {
      const next = new Client({ connectionString: deps.connectionString, application_name: 'weft-listen' });
      next.on('notification', (message) => {
        const payload = message.payload ?? '';
        const key = payload.slice(0, payload.indexOf(' '));
        for (const subscriber of subscribers.get(key) ?? []) subscriber.notify(payload);
      });
      const lost = (error: unknown) => {
        if (client !== next) return;
        client = null;
        next.removeAllListeners('end');
        next.end().catch(() => {});
        scheduleReconnect(error);
      };
      next.on('error', lost);
      next.on('end', () => lost(new Error('connection ended')));
      try {
        await next.connect();
        await next.query(`LISTEN "${channel}"`);
      } catch (error) {
        next.end().catch(() => {});
        scheduleReconnect(error);
        return;
      }
      if (closed) {
        await next.end().catch(() => {});
        return;
      }
      client = next;
      delayMs = backoff.initialMs;
      if (resync) each((subscriber) => subscriber.resync());
    })().finally(() => {
      connecting = null;
    });
    return connecting;
  }

  return {
    /**
     * Adds a subscriber for notifications keyed `key`; resolves once the channel is listened to
     * (a read after this sees every later commit's notification or its row). Answers the unsubscribe.
     */
    async subscribe(key: string, subscriber: NotifySubscriber): Promise<() => void> {
      const set = subscribers.get(key) ?? new Set();
      set.add(subscriber);
      subscribers.set(key, set);
      if (!client && !retry) await (connecting ?? connect(false));
      return () => {
        set.delete(subscriber);
        if (set.size === 0 && subscribers.get(key) === set) subscribers.delete(key);
      };
    },

    /** Drops the connection as if it were lost (tests of the reconnect). */
    dropConnection(): void {
      client?.emit('error', new Error('dropped on purpose'));
    },

    async close(): Promise<void> {
      closed = true;
      clearTimeout(retry);
      await connecting;
      const open = client;
      client = null;
      open?.removeAllListeners('end');
      await open?.end().catch(() => {});
    },
  };
}

export type NotifyListener = ReturnType<typeof createNotifyListener>;
