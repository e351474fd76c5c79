import type { MigrationInterface, QueryRunner } from 'typeorm';
import { workspaceRlsSql } from './rls';

/**
 * The capability surface's idempotency store (knowledge-graph-service-api.md §4.2 and §8: a write
 * capability's key replays its first envelope for 24 hours). One row per key and workspace, written
 * in the same transaction as the call's side effect, so a key has a row exactly when its side effect committed.
 */
export class Capabilities1763780008700 implements MigrationInterface {
  name = 'Capabilities1763780008700';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE capability_idempotency_keys (
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  idempotency_key varchar(255) NOT NULL,
  tool text NOT NULL,
  -- SHA-256 of the request body in canonical JSON (keys sorted), hex.
  request_hash char(64) NOT NULL,
  envelope jsonb NOT NULL,
  user_id uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, idempotency_key)
);
CREATE INDEX capability_idempotency_keys_created_idx ON capability_idempotency_keys (created_at);

-- The purge schedule deletes keys past the replay window in every workspace; it sees no row's
-- content, and removes at most batch_size rows per call so each transaction stays short.
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
`);
    await q.query(workspaceRlsSql('capability_idempotency_keys'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION IF EXISTS weft_purge_idempotency_keys(interval, integer);
DROP TABLE IF EXISTS capability_idempotency_keys;
`);
  }
}
