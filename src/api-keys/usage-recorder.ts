import type { UsageSink } from '../platform/auth/authenticator';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import type { UsageIncrement } from './repository';
import { addUsage } from './repository';

/** The authenticator's usage sink, buffered: counts reach the database once per interval. */
export interface UsageRecorder extends UsageSink {
  /** Writes buffered counts now; usage reads call it so a caller sees its own requests. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

type Pending = UsageIncrement;

/**
 * Counts authenticated requests per credential and UTC day. Counting in memory and writing
 * once per interval keeps a database write off every request's path.
 */
export function createUsageRecorder(deps: { uow: UnitOfWork; logger: Logger; intervalMs: number }): UsageRecorder {
  let pending = new Map<string, Pending>();
  let flushing: Promise<void> = Promise.resolve();

  async function write(batch: Pending[]) {
    const byUser = new Map<string, Pending[]>();
    for (const entry of batch) byUser.set(entry.userId, [...(byUser.get(entry.userId) ?? []), entry]);
    for (const [userId, entries] of byUser) {
      await deps.uow({ userId }, async (m) => {
        for (const entry of entries) await addUsage(m, entry);
      });
    }
  }

  function flush(): Promise<void> {
    flushing = flushing.then(async () => {
      if (pending.size === 0) return;
      const batch = [...pending.values()];
      pending = new Map();
      try {
        await write(batch);
      } catch (error) {
        deps.logger.error({ err: error }, 'key usage flush failed');
      }
    });
    return flushing;
  }

  const timer = setInterval(() => void flush(), deps.intervalMs);
  timer.unref();

  return {
    record({ credentialId, workspaceId, userId }) {
      const now = new Date();
      const day = now.toISOString().slice(0, 10);
      const key = `${credentialId}:${day}`;
      const entry = pending.get(key);
      if (entry) {
        entry.count += 1;
        entry.lastUsedAt = now;
      } else {
        pending.set(key, { credentialId, workspaceId, userId, day, count: 1, lastUsedAt: now });
      }
    },
    flush,
    async stop() {
      clearInterval(timer);
      await flush();
    },
  };
}
