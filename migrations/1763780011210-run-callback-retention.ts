import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';

/**
 * Issue 26 part 2: run callback deliveries (with their attempts, by cascade) older than the
 * retention are deleted daily in every workspace, without reading them, at most `batch_size` per
 * call. A delivery still retrying is kept whatever its age (its window is 24 hours from its last
 * redelivery).
 */
export class RunCallbackRetention1763780011210 implements MigrationInterface {
  name = 'RunCallbackRetention1763780011210';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE INDEX run_callback_deliveries_created_idx ON run_callback_deliveries (created_at);
CREATE FUNCTION weft_purge_run_callback_deliveries(older_than interval, batch_size integer) RETURNS integer
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public
  AS $$
    WITH doomed AS (
      SELECT id FROM run_callback_deliveries
      WHERE created_at < now() - older_than AND status <> 'pending'
      ORDER BY created_at LIMIT batch_size
    ), deleted AS (
      DELETE FROM run_callback_deliveries d USING doomed WHERE d.id = doomed.id RETURNING 1
    )
    SELECT count(*)::int FROM deleted
  $$;
REVOKE ALL ON FUNCTION weft_purge_run_callback_deliveries(interval, integer) FROM PUBLIC;
`);
    await grantToAppRole(q, 'weft_purge_run_callback_deliveries(interval, integer)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION IF EXISTS weft_purge_run_callback_deliveries(interval, integer);
DROP INDEX IF EXISTS run_callback_deliveries_created_idx;
`);
  }
}
