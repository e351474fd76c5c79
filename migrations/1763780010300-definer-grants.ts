import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';

/**
 * Review L-2: two definer functions were executable by PUBLIC, and the key purge took its window
 * from the caller, so any role on the database could delete every workspace's Idempotency-Keys
 * with `'0 s'` and turn replays into double executions. The purge now fixes the 24 h replay
 * window itself (LIMITS.idempotencyReplayHours, the spec's §8), and only the app role executes
 * either function.
 */
export class DefinerGrants1763780010300 implements MigrationInterface {
  name = 'DefinerGrants1763780010300';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION weft_purge_idempotency_keys(interval, integer);
-- The window is part of the function: a caller picks only how many rows one call removes.
CREATE FUNCTION weft_purge_idempotency_keys(batch_size integer) RETURNS integer
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public
  AS $$
    WITH doomed AS (
      SELECT workspace_id, idempotency_key FROM capability_idempotency_keys
      WHERE created_at < now() - interval '24 hours'
      ORDER BY created_at LIMIT least(greatest(batch_size, 0), 10000)
    ), deleted AS (
      DELETE FROM capability_idempotency_keys k USING doomed d
      WHERE k.workspace_id = d.workspace_id AND k.idempotency_key = d.idempotency_key
      RETURNING 1
    )
    SELECT count(*)::int FROM deleted
  $$;
REVOKE ALL ON FUNCTION weft_purge_idempotency_keys(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION weft_stale_session_workspaces(interval) FROM PUBLIC;
`);
    await grantToAppRole(q, 'weft_purge_idempotency_keys(integer)');
    await grantToAppRole(q, 'weft_stale_session_workspaces(interval)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION IF EXISTS weft_purge_idempotency_keys(integer);
CREATE FUNCTION weft_purge_idempotency_keys(older_than interval, batch_size integer) RETURNS integer
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public
  AS $$
    WITH doomed AS (
      SELECT workspace_id, idempotency_key FROM capability_idempotency_keys
      WHERE created_at < now() - older_than
      ORDER BY created_at LIMIT batch_size
    ), deleted AS (
      DELETE FROM capability_idempotency_keys k USING doomed d
      WHERE k.workspace_id = d.workspace_id AND k.idempotency_key = d.idempotency_key
      RETURNING 1
    )
    SELECT count(*)::int FROM deleted
  $$;
GRANT EXECUTE ON FUNCTION weft_stale_session_workspaces(interval) TO PUBLIC;
`);
  }
}
