import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';

/**
 * The embedding backfill's coarse filter: which workspaces (after `after`, in id order) have a
 * live node without a vector older than `min_age`, read from the unembedded-nodes index past RLS.
 * Which of those nodes are due is decided under the workspace's own policy.
 */
export class EmbeddingBackfill1763780008420 implements MigrationInterface {
  name = 'EmbeddingBackfill1763780008420';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE FUNCTION weft_unembedded_workspaces(min_age interval, after uuid, max_rows int) RETURNS SETOF uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$ SELECT DISTINCT workspace_id FROM nodes
        WHERE embedding IS NULL AND NOT is_deleted AND created_at <= now() - min_age
          AND (after IS NULL OR workspace_id > after)
        ORDER BY workspace_id LIMIT max_rows $$;
REVOKE ALL ON FUNCTION weft_unembedded_workspaces(interval, uuid, int) FROM PUBLIC;
`);
    await grantToAppRole(q, 'weft_unembedded_workspaces(interval, uuid, int)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS weft_unembedded_workspaces(interval, uuid, int)`);
  }
}
