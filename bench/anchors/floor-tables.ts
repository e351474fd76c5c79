// The hand-written durable run's own bookkeeping (bench/runs.ts's "floor" anchor): scratch tables of
// the bench, never Weft's, and the one transaction helper both its API and its activities use.
import type { Pool, PoolClient } from 'pg';

/** Created at bench start; rows pile up run after run as Weft's own run tables do. */
export const FLOOR_TABLES = `
  CREATE TABLE IF NOT EXISTS bench_floor_runs (
    id uuid PRIMARY KEY,
    workspace_id uuid NOT NULL,
    tenant_id uuid NOT NULL,
    status text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE TABLE IF NOT EXISTS bench_floor_steps (
    run_id uuid NOT NULL REFERENCES bench_floor_runs (id),
    index int NOT NULL,
    tool text NOT NULL,
    status text NOT NULL,
    output jsonb,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, index)
  );
  CREATE TABLE IF NOT EXISTS bench_floor_events (
    id bigserial PRIMARY KEY,
    run_id uuid NOT NULL REFERENCES bench_floor_runs (id),
    step_index int NOT NULL,
    type text NOT NULL,
    payload jsonb,
    created_at timestamptz NOT NULL DEFAULT now()
  );`;

/** BEGIN, `work`, COMMIT on one pooled connection (ROLLBACK and rethrow if `work` fails). */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
