import { Counter } from 'prom-client';
import type { DataSource } from 'typeorm';
import { z } from 'zod';
import { LIMITS } from '../../rules/limits';
import { DomainError } from '../errors';
import { metricsRegistry } from '../metrics/registry';

/**
 * Reads from a streaming-replication standby (issue 44 item 4, DATABASE_REPLICA_URL). A route marked
 * `reads: 'standby'` lets its scoped reads and snapshot units of work go to the standby; everything
 * else (writes, anything under a lock or a charge, credential lookups, open event streams) stays on
 * the primary. Read-your-writes: a request that committed a write answers its WAL position in the
 * `Weft-Read-After` header; a request that sends it back is read from the standby only once the
 * standby has replayed that far, else from the primary. A read that fails on the standby (down,
 * a recovery conflict) is read again from the primary: the standby only ever takes load away.
 */
export const READ_AFTER_HEADER = 'Weft-Read-After';

/** A WAL position as Postgres prints it (`16/B374D848`). */
export const Lsn = z
  .string()
  .regex(/^[0-9A-Fa-f]{1,8}\/[0-9A-Fa-f]{1,8}$/, 'a WAL position as Postgres prints it, like 16/B374D848');

/** Orders two WAL positions: the high and low 32-bit halves, as numbers. */
export const lsnValue = (lsn: string): bigint => {
  const [high, low] = lsn.split('/') as [string, string];
  return (BigInt(`0x${high}`) << 32n) | BigInt(`0x${low}`);
};

/** Where one request's reads may go, and what they must see. */
export interface ReadPosition {
  /** The route lets its reads go to the standby. */
  standby: boolean;
  /** The WAL position the reads must see: the caller's last write (the header), then this request's own. */
  after?: string;
  /** This request's last committed write, answered in the header. */
  wrote?: string;
}

const positions = new WeakMap<object, ReadPosition>();

/** Places `owner`'s (a request's principal's) reads; scopeOf carries the position into every scope. */
export function placeReads(owner: object, position: ReadPosition): void {
  positions.set(owner, position);
}

export const readPositionOf = (owner: object): ReadPosition | undefined => positions.get(owner);

interface PgPool {
  query(sql: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
}

/** The standby as the reads see it: its data source, and whether it has replayed a position yet. */
export interface Standby {
  dataSource: DataSource;
  /** The standby may serve a read that must see `position.after`; asks it only when its last answer is behind. */
  serves(position: ReadPosition): Promise<boolean>;
  /** A failed read there: noted, and answered by the primary; the standby rests a while (LIMITS.standby). */
  failed(error: unknown): void;
  /** Resting after a failure: reads go to the primary without trying it. */
  resting(): boolean;
}

export function createStandby(dataSource: DataSource, onFailure: (error: unknown) => void = () => {}): Standby {
  const pool = (dataSource.driver as unknown as { master: PgPool }).master;
  let replayed = -1n;
  let restUntil = 0;
  const failed = (error: unknown) => {
    restUntil = Date.now() + LIMITS.standby.restAfterFailureMs;
    onFailure(error);
  };
  return {
    dataSource,
    resting: () => Date.now() < restUntil,
    async serves(position) {
      if (!position.standby) return false;
      if (!position.after) return true;
      const needed = lsnValue(position.after);
      if (replayed >= needed) return true;
      try {
        const { rows } = await pool.query('SELECT pg_last_wal_replay_lsn()::text AS lsn');
        const lsn = (rows[0] as { lsn: string | null } | undefined)?.lsn;
        if (lsn) replayed = lsnValue(lsn) > replayed ? lsnValue(lsn) : replayed;
      } catch (error) {
        failed(error);
        return false;
      }
      return replayed >= needed;
    },
    failed,
  };
}

/**
 * Where the reads a route let go to the standby were served: `standby`; `behind`, on the primary because the
 * standby had not replayed the caller's last write (read-your-writes) or could not say how far it had; `failed`,
 * on the primary after the standby's read failed; `resting`, on the primary without trying the standby, within
 * LIMITS.standby.restAfterFailureMs of a failure. Their ratio is the share of the load the standby takes.
 */
const standbyReads = new Counter({
  name: 'weft_db_standby_reads_total',
  help: 'Reads a route let go to the standby, by where they were served (standby, behind, failed, resting).',
  labelNames: ['outcome'],
  registers: [metricsRegistry],
});

/** Reads `read` from the standby when the position allows, from the primary otherwise or when that fails. */
export async function fromStandbyOr<T>(
  standby: Standby | undefined,
  position: ReadPosition | undefined,
  read: (onStandby: boolean) => Promise<T>,
): Promise<T> {
  if (!standby || !position?.standby) return read(false);
  if (standby.resting()) {
    standbyReads.inc({ outcome: 'resting' });
    return read(false);
  }
  if (!(await standby.serves(position))) {
    standbyReads.inc({ outcome: 'behind' });
    return read(false);
  }
  try {
    const answer = await read(true);
    standbyReads.inc({ outcome: 'standby' });
    return answer;
  } catch (error) {
    // An answer (a 404, a refusal) is the same on the primary: only the database's failures go there.
    if (error instanceof DomainError) {
      standbyReads.inc({ outcome: 'standby' });
      throw error;
    }
    standby.failed(error);
  }
  standbyReads.inc({ outcome: 'failed' });
  return read(false);
}
