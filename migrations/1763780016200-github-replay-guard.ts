import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Review NL-5: GitHub signs neither a time nor its delivery id, so a captured delivery verifies for
 * as long as the secret that signed it does, and only the accepted original's (trigger, body hash)
 * row answers a replay as a duplicate. The retention purge therefore no longer deletes such an
 * original while its secret may still verify: past retention it keeps the row's hash and ids and
 * drops the body and headers; it deletes the row once the secret was rotated after it arrived and
 * that rotation's grace is over (or the trigger left the GitHub scheme, which rotates too).
 * `secret_rotated_at` is when the current secret replaced the previous one.
 */
export class GithubReplayGuard1763780016200 implements MigrationInterface {
  name = 'GithubReplayGuard1763780016200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE webhook_triggers ADD COLUMN secret_rotated_at timestamptz;
-- Rotations so far set the previous secret's expiry to the rotation plus the grace (24 hours).
UPDATE webhook_triggers SET secret_rotated_at = previous_secret_expires_at - interval '24 hours'
  WHERE previous_secret_expires_at IS NOT NULL;

CREATE OR REPLACE FUNCTION weft_purge_webhook_deliveries(older_than interval, batch_size integer) RETURNS integer
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public
  AS $$
    WITH old AS (
      SELECT d.id,
        -- A GitHub original whose signing secret may still verify: its replay guard must stay.
        coalesce(d.signed_t = 0 AND d.status_code = 202 AND d.duplicate_of IS NULL AND d.redelivery_of IS NULL
          AND t.signature_scheme = 'github'
          AND NOT coalesce(t.secret_rotated_at > d.received_at AND t.previous_secret_expires_at <= now(), false),
          false) AS guard,
        d.body IS NULL AND d.headers = '[]'::jsonb AS stripped
      FROM webhook_deliveries d JOIN webhook_triggers t ON t.id = d.trigger_id
      WHERE d.received_at < now() - older_than
    ), doomed AS (
      SELECT id, guard FROM old WHERE NOT (guard AND stripped) LIMIT batch_size
    ), kept AS (
      UPDATE webhook_deliveries d SET body = NULL, headers = '[]'::jsonb
      FROM doomed WHERE d.id = doomed.id AND doomed.guard RETURNING 1
    ), deleted AS (
      DELETE FROM webhook_deliveries d USING doomed WHERE d.id = doomed.id AND NOT doomed.guard RETURNING 1
    )
    SELECT ((SELECT count(*) FROM kept) + (SELECT count(*) FROM deleted))::int
  $$;
REVOKE ALL ON FUNCTION weft_purge_webhook_deliveries(interval, integer) FROM PUBLIC;
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE OR REPLACE FUNCTION weft_purge_webhook_deliveries(older_than interval, batch_size integer) RETURNS integer
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public
  AS $$
    WITH doomed AS (
      SELECT id FROM webhook_deliveries WHERE received_at < now() - older_than
      ORDER BY received_at LIMIT batch_size
    ), deleted AS (
      DELETE FROM webhook_deliveries d USING doomed WHERE d.id = doomed.id RETURNING 1
    )
    SELECT count(*)::int FROM deleted
  $$;
REVOKE ALL ON FUNCTION weft_purge_webhook_deliveries(interval, integer) FROM PUBLIC;
ALTER TABLE webhook_triggers DROP COLUMN secret_rotated_at;
`);
  }
}
