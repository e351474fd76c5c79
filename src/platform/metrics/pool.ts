import { Counter, Gauge } from 'prom-client';
import type { DataSource } from 'typeorm';
import { metricsRegistry } from './registry';

/** The part of pg's Pool these figures read; TypeORM's postgres driver keeps it as `master`. */
interface PgPool {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
  options: { max?: number };
  connect: (...args: unknown[]) => unknown;
}

/** The pools of each role, latest last: a process reports its newest live one (tests start several). */
const pools = new Map<string, PgPool[]>();

const poolGauge = (name: string, help: string, read: (pool: PgPool) => number) =>
  new Gauge({
    name,
    help,
    labelNames: ['pool'],
    registers: [metricsRegistry],
    collect() {
      this.reset();
      for (const [role, live] of pools) {
        const pool = live.at(-1);
        if (pool) this.set({ pool: role }, read(pool));
      }
    },
  });

poolGauge('weft_db_pool_in_use', 'Database connections checked out of the pool.', (p) => p.totalCount - p.idleCount);
poolGauge('weft_db_pool_idle', 'Open database connections waiting in the pool.', (p) => p.idleCount);
poolGauge('weft_db_pool_waiting', 'Checkouts queued for a connection of a full pool.', (p) => p.waitingCount);
poolGauge(
  'weft_db_pool_max',
  'The pool’s size (DATABASE_POOL_SIZE or DATABASE_WORKER_POOL_SIZE).',
  (p) => p.options.max ?? 0,
);

const acquireTimeouts = new Counter({
  name: 'weft_db_pool_acquire_timeouts_total',
  help: 'Checkouts that gave up after DATABASE_ACQUIRE_TIMEOUT_MS (the request or activity failed with it).',
  labelNames: ['pool'],
  registers: [metricsRegistry],
});

// pg-pool's words for a checkout that waited past connectionTimeoutMillis.
const isAcquireTimeout = (error: unknown) =>
  error instanceof Error && /timeout exceeded when trying to connect/i.test(error.message);

/**
 * Reports a data source's pool under `role` ('api' or 'worker') until `stop` (the runtime's close).
 * Acquire timeouts are counted by wrapping the pool's `connect`, which TypeORM calls with a callback.
 */
export function observePool(dataSource: DataSource, role: string): () => void {
  const pool = (dataSource.driver as unknown as { master?: PgPool }).master;
  if (!pool) return () => undefined;
  const connect = pool.connect.bind(pool);
  pool.connect = (...args: unknown[]) => {
    const callback = args[0];
    if (typeof callback === 'function') {
      return connect((error: unknown, ...rest: unknown[]) => {
        if (isAcquireTimeout(error)) acquireTimeouts.inc({ pool: role });
        return callback(error, ...rest);
      });
    }
    return (connect() as Promise<unknown>).catch((error: unknown) => {
      if (isAcquireTimeout(error)) acquireTimeouts.inc({ pool: role });
      throw error;
    });
  };
  pools.set(role, [...(pools.get(role) ?? []), pool]);
  // Closing a later runtime of the same role hands the report back to the one still running.
  return () => {
    pools.set(
      role,
      (pools.get(role) ?? []).filter((observed) => observed !== pool),
    );
  };
}
