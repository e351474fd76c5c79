import type { UsageSink } from '../platform/auth/authenticator';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import { LIMITS } from '../rules/limits';
import type { UsageIncrement } from './repository';
import { addUsage } from './repository';
import { UsageBuffer } from './usage-buffer';

/** The authenticator's usage sink, buffered: counts reach the database once per interval. */
export interface UsageRecorder extends UsageSink {
  /** Writes buffered counts now; usage reads call it so a caller sees its own requests. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Counts authenticated requests per credential and UTC day. Counting in memory and writing
 * once per interval keeps a database write off every request's path. A flush that fails (Postgres
 * down) keeps its counts for the next one (`UsageBuffer`, at most `LIMITS.usageBufferKeys` entries);
 * each user's counts commit in one transaction, so a partly failed flush puts back only the rest.
 */
export function createUsageRecorder(deps: { uow: UnitOfWork; logger: Logger; intervalMs: number }): UsageRecorder {
  const buffer = new UsageBuffer(LIMITS.usageBufferKeys);
  let flushing: Promise<void> = Promise.resolve();

  /** Writes each user's entries in a transaction of their own; answers the entries not written. */
  async function write(batch: UsageIncrement[]): Promise<{ unwritten: UsageIncrement[]; error?: unknown }> {
    const byUser = new Map<string, UsageIncrement[]>();
    for (const entry of batch) byUser.set(entry.userId, [...(byUser.get(entry.userId) ?? []), entry]);
    const unwritten: UsageIncrement[] = [];
    let firstError: unknown;
    for (const [userId, entries] of byUser) {
      try {
        await deps.uow({ userId }, async (m) => {
          for (const entry of entries) await addUsage(m, entry);
        });
      } catch (error) {
        firstError ??= error;
        unwritten.push(...entries);
      }
    }
    return { unwritten, error: firstError };
  }

  function flush(): Promise<void> {
    flushing = flushing.then(async () => {
      const dropped = buffer.takeDropped();
      if (dropped > 0) {
        deps.logger.error({ dropped, kept: buffer.size }, 'key usage buffer full; requests not counted');
      }
      if (buffer.size === 0) return;
      const { unwritten, error } = await write(buffer.take());
      if (unwritten.length > 0) {
        buffer.restore(unwritten);
        deps.logger.error({ err: error, kept: unwritten.length }, 'key usage flush failed; counts kept for the next');
      }
    });
    return flushing;
  }

  const timer = setInterval(() => void flush(), deps.intervalMs);
  timer.unref();

  return {
    record({ credentialId, workspaceId, userId }) {
      const now = new Date();
      buffer.add({ credentialId, workspaceId, userId, day: now.toISOString().slice(0, 10), count: 1, lastUsedAt: now });
    },
    flush,
    async stop() {
      clearInterval(timer);
      await flush();
    },
  };
}
