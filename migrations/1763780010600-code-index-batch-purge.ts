import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';

/**
 * Stored code-index batches had no cleanup: an applied row keeps its result, one whose workflow
 * never ran keeps the whole batch. Its result is only needed while the batch's workflow may retry
 * its apply, so the hourly capability key purge also deletes rows older than a day (LIMITS.code.
 * batchRetentionHours), in every workspace. The window is part of the function, as for the key purge
 * (review L-2): a caller picks only how many rows one call removes.
 */
export class CodeIndexBatchPurge1763780010600 implements MigrationInterface {
  name = 'CodeIndexBatchPurge1763780010600';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE INDEX code_index_batches_created_idx ON code_index_batches (created_at);
CREATE FUNCTION weft_purge_code_index_batches(batch_size integer) RETURNS integer
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public
  AS $$
    WITH doomed AS (
      SELECT id FROM code_index_batches
      WHERE created_at < now() - interval '24 hours'
      ORDER BY created_at LIMIT least(greatest(batch_size, 0), 10000)
    ), deleted AS (
      DELETE FROM code_index_batches b USING doomed d WHERE b.id = d.id
      RETURNING 1
    )
    SELECT count(*)::int FROM deleted
  $$;
REVOKE ALL ON FUNCTION weft_purge_code_index_batches(integer) FROM PUBLIC;
`);
    await grantToAppRole(q, 'weft_purge_code_index_batches(integer)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION IF EXISTS weft_purge_code_index_batches(integer);
DROP INDEX IF EXISTS code_index_batches_created_idx;
`);
  }
}
