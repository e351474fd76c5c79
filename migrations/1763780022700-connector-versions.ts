import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Issue 41 item 2, "a run keeps the version it started with": each version of a connector's tool
 * list is kept (`connector_versions`, the current one included), and a run records at dispatch the
 * version of each of its workspace's connectors (`run_executions.connector_versions`, `{<connector
 * id>: {name, version}}`; NULL for a run dispatched before this, which uses the current versions).
 * Two definer functions for the hourly maintenance pass: one prunes old versions no unfinished run
 * pinned, the other deletes the call ledger's rows past the replay window (no longer in passing).
 */
export class ConnectorVersions1763780022700 implements MigrationInterface {
  name = 'ConnectorVersions1763780022700';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE connector_versions (
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  connector_id uuid NOT NULL REFERENCES connectors(id) ON DELETE CASCADE,
  version integer NOT NULL CHECK (version >= 1),
  tools jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connector_id, version)
);
INSERT INTO connector_versions (workspace_id, connector_id, version, tools, created_at)
  SELECT workspace_id, id, version, tools, refreshed_at FROM connectors;
ALTER TABLE run_executions ADD COLUMN connector_versions jsonb;
CREATE INDEX connector_calls_sent_at ON connector_calls (sent_at);

-- The window is part of the function (LIMITS.idempotencyReplayHours), as for the capability keys.
CREATE FUNCTION weft_purge_connector_calls(batch_size integer) RETURNS integer
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public
  AS $$
    WITH doomed AS (
      SELECT workspace_id, idempotency_key FROM connector_calls
      WHERE sent_at < now() - interval '24 hours'
      ORDER BY sent_at LIMIT least(greatest(batch_size, 0), 10000)
    ), deleted AS (
      DELETE FROM connector_calls c USING doomed d
      WHERE c.workspace_id = d.workspace_id AND c.idempotency_key = d.idempotency_key
      RETURNING 1
    )
    SELECT count(*)::int FROM deleted
  $$;

-- A version older than its connector's current one goes once no unfinished run pinned it.
CREATE FUNCTION weft_prune_connector_versions(batch_size integer) RETURNS integer
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public
  AS $$
    WITH doomed AS (
      SELECT v.connector_id, v.version FROM connector_versions v JOIN connectors c ON c.id = v.connector_id
      WHERE v.version < c.version
        AND NOT EXISTS (
          SELECT 1 FROM run_executions r
          WHERE r.workspace_id = v.workspace_id
            AND r.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
            AND (r.connector_versions -> v.connector_id::text ->> 'version')::int = v.version
        )
      ORDER BY v.created_at LIMIT least(greatest(batch_size, 0), 10000)
    ), deleted AS (
      DELETE FROM connector_versions v USING doomed d
      WHERE v.connector_id = d.connector_id AND v.version = d.version
      RETURNING 1
    )
    SELECT count(*)::int FROM deleted
  $$;
REVOKE ALL ON FUNCTION weft_purge_connector_calls(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION weft_prune_connector_versions(integer) FROM PUBLIC;
`);
    await q.query(workspaceRlsSql('connector_versions'));
    await grantToAppRole(q, 'weft_purge_connector_calls(integer)');
    await grantToAppRole(q, 'weft_prune_connector_versions(integer)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION IF EXISTS weft_prune_connector_versions(integer);
DROP FUNCTION IF EXISTS weft_purge_connector_calls(integer);
DROP INDEX IF EXISTS connector_calls_sent_at;
ALTER TABLE run_executions DROP COLUMN IF EXISTS connector_versions;
`);
    await q.query(dropWorkspaceRlsSql('connector_versions'));
    await q.query('DROP TABLE IF EXISTS connector_versions');
  }
}
