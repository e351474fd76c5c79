import type { Pool } from 'pg';
import { inTransaction } from './floor-tables';

export const anchorActivities = {
  async noop(): Promise<string> {
    return 'ok';
  },
};

/** One step of the hand-written durable run (bench/anchors/floor-api.ts). */
export interface FloorStep {
  runId: string;
  tenantId: string;
  index: number;
  /** The last step also marks the run SUCCEEDED. */
  last: boolean;
}

/**
 * The floor's step, as a durable run needs it at least: RUNNING committed before the tool runs (so
 * a crash shows where it stopped), the tool (the tenant's credit balance, as `billing.credits_balance`
 * reads it), then SUCCEEDED with its output and an event row, in one transaction.
 */
export const floorActivities = (pool: Pool) => ({
  async floorStep(step: FloorStep): Promise<void> {
    const key = [step.runId, step.index];
    await inTransaction(pool, (c) =>
      c.query(
        `UPDATE bench_floor_steps SET status = 'RUNNING', updated_at = now() WHERE run_id = $1 AND index = $2`,
        key,
      ),
    );
    const { rows } = await pool.query(`SELECT credit_balance AS balance, locked FROM tenants WHERE id = $1`, [
      step.tenantId,
    ]);
    const output = JSON.stringify(rows[0] ?? null);
    await inTransaction(pool, async (c) => {
      await c.query(
        `UPDATE bench_floor_steps SET status = 'SUCCEEDED', output = $3, updated_at = now()
         WHERE run_id = $1 AND index = $2`,
        [...key, output],
      );
      await c.query(
        `INSERT INTO bench_floor_events (run_id, step_index, type, payload) VALUES ($1, $2, 'step.succeeded', $3)`,
        [...key, output],
      );
      if (step.last) {
        await c.query(`UPDATE bench_floor_runs SET status = 'SUCCEEDED', updated_at = now() WHERE id = $1`, [
          step.runId,
        ]);
      }
    });
  },
});
