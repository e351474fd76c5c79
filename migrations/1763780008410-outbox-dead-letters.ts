import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';

/**
 * Outbox delivery with a bound: a failed row waits `next_attempt_at` (exponential backoff) and is
 * dead-lettered (`dead_lettered_at`) after the maximum attempts, so poison rows neither starve newer
 * ones nor retry for ever; delivered rows are purged after a retention by the sweep, through a
 * definer function that deletes only delivered rows.
 */
export class OutboxDeadLetters1763780008410 implements MigrationInterface {
  name = 'OutboxDeadLetters1763780008410';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE outbox ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN dead_lettered_at timestamptz;
DROP INDEX outbox_pending_idx;
CREATE INDEX outbox_pending_idx ON outbox (workspace_id, id) WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL;
CREATE INDEX outbox_delivered_idx ON outbox (dispatched_at) WHERE dispatched_at IS NOT NULL;
CREATE INDEX outbox_dead_letter_idx ON outbox (workspace_id, dead_lettered_at) WHERE dead_lettered_at IS NOT NULL;

CREATE OR REPLACE FUNCTION weft_outbox_pending_workspaces(min_age interval) RETURNS SETOF uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$ SELECT DISTINCT workspace_id FROM outbox
        WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL
          AND created_at <= now() - min_age AND next_attempt_at <= now() $$;

-- Deletes at most max_rows delivered rows older than the retention (never less than an hour).
CREATE FUNCTION weft_outbox_purge_delivered(retention interval, max_rows int) RETURNS int
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public
  AS $$ WITH gone AS (
          DELETE FROM outbox WHERE id IN (
            SELECT id FROM outbox WHERE dispatched_at < now() - GREATEST(retention, interval '1 hour')
            ORDER BY dispatched_at LIMIT max_rows)
          RETURNING 1)
        SELECT count(*)::int FROM gone $$;
REVOKE ALL ON FUNCTION weft_outbox_purge_delivered(interval, int) FROM PUBLIC;
`);
    await grantToAppRole(q, 'weft_outbox_purge_delivered(interval, int)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION IF EXISTS weft_outbox_purge_delivered(interval, int);
CREATE OR REPLACE FUNCTION weft_outbox_pending_workspaces(min_age interval) RETURNS SETOF uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$ SELECT DISTINCT workspace_id FROM outbox WHERE dispatched_at IS NULL AND created_at <= now() - min_age $$;
DROP INDEX IF EXISTS outbox_dead_letter_idx, outbox_delivered_idx, outbox_pending_idx;
CREATE INDEX outbox_pending_idx ON outbox (workspace_id, id) WHERE dispatched_at IS NULL;
ALTER TABLE outbox DROP COLUMN IF EXISTS dead_lettered_at, DROP COLUMN IF EXISTS next_attempt_at;
`);
  }
}
