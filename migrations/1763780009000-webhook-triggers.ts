import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Webhook triggers (contract 4.6, 2.9): a trigger per slug, and a delivery record per inbound
 * request. The intake carries no bearer token, so it cannot set a workspace before it knows the
 * trigger; one narrow definer function resolves an enabled slug to exactly what verification needs
 * (ids and the sealed secrets), and everything after runs under that workspace's RLS.
 */
export class WebhookTriggers1763780009000 implements MigrationInterface {
  name = 'WebhookTriggers1763780009000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE webhook_triggers (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  -- Unique across workspaces: the intake URL names no workspace.
  slug text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{2,62}$'),
  enabled boolean NOT NULL DEFAULT true,
  -- AES-256-GCM under WEFT_ENCRYPTION_KEY, bound to the workspace and trigger id: a dump alone signs nothing.
  secret_sealed text NOT NULL,
  previous_secret_sealed text,
  previous_secret_expires_at timestamptz,
  filter_expression text,
  run_template jsonb NOT NULL,
  -- Whom the dispatched runs act as: the creator's user, scopes and credential, frozen at creation.
  principal jsonb NOT NULL,
  created_by uuid NOT NULL REFERENCES users(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workspace_id, id)
);
CREATE INDEX webhook_triggers_recent_idx ON webhook_triggers (workspace_id, created_at DESC, id DESC);

CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  trigger_id uuid NOT NULL,
  received_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- As received: [name, value] pairs in order, names in their original case.
  headers jsonb NOT NULL,
  -- The exact bytes that were signed; NULL only for a 413 (the rest was never read).
  body bytea,
  status_code integer NOT NULL,
  reason text,
  filter_result text CHECK (filter_result IN ('matched', 'not_matched', 'error')),
  filter_error text,
  idempotency_key text,
  execution_id uuid,
  duplicate_of uuid REFERENCES webhook_deliveries(id) ON DELETE SET NULL,
  redelivery_of uuid REFERENCES webhook_deliveries(id) ON DELETE SET NULL,
  FOREIGN KEY (workspace_id, trigger_id) REFERENCES webhook_triggers (workspace_id, id) ON DELETE CASCADE
);
-- Contract 4.6 rule 3: one accepted original per key; concurrent requests with one key meet here.
CREATE UNIQUE INDEX webhook_deliveries_key_idx ON webhook_deliveries (trigger_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL AND duplicate_of IS NULL AND status_code = 202 AND redelivery_of IS NULL;
CREATE INDEX webhook_deliveries_recent_idx ON webhook_deliveries (trigger_id, received_at DESC, id DESC);
CREATE INDEX webhook_deliveries_received_idx ON webhook_deliveries (received_at);

-- The intake's only way past RLS: an enabled slug's ids and sealed secrets (the previous one only
-- while its grace lasts). Nothing else of the trigger, and nothing of any other.
CREATE FUNCTION weft_webhook_trigger_for_slug(p_slug text)
  RETURNS TABLE (trigger_id uuid, workspace_id uuid, secret_sealed text, previous_secret_sealed text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$
    SELECT t.id, t.workspace_id, t.secret_sealed,
      CASE WHEN t.previous_secret_expires_at > now() THEN t.previous_secret_sealed END
    FROM webhook_triggers t WHERE t.slug = p_slug AND t.enabled
  $$;
REVOKE ALL ON FUNCTION weft_webhook_trigger_for_slug(text) FROM PUBLIC;

-- The retention schedule deletes old records in every workspace without reading them,
-- at most batch_size rows per call so each transaction stays short.
CREATE FUNCTION weft_purge_webhook_deliveries(older_than interval, batch_size integer) RETURNS integer
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
`);
    for (const table of ['webhook_triggers', 'webhook_deliveries']) await q.query(workspaceRlsSql(table));
    await grantToAppRole(q, 'weft_webhook_trigger_for_slug(text)');
    await grantToAppRole(q, 'weft_purge_webhook_deliveries(interval, integer)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION IF EXISTS weft_purge_webhook_deliveries(interval, integer);
DROP FUNCTION IF EXISTS weft_webhook_trigger_for_slug(text);
`);
    for (const table of ['webhook_deliveries', 'webhook_triggers']) {
      await q.query(dropWorkspaceRlsSql(table));
      await q.query(`DROP TABLE ${table}`);
    }
  }
}
