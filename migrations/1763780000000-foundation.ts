import type { MigrationInterface, QueryRunner } from 'typeorm';
import { CURRENT_USER, CURRENT_WORKSPACE, rlsFunctionsSql, workspaceRlsSql } from './rls';

/**
 * Tenancy, credentials, the graph, the type catalog, the credit ledger, prompt-run audit rows,
 * the outbox and events. Uniques are per workspace so that one workspace cannot probe another's
 * rows; the key hash is the one global unique, and it is a hash of 256 random bits.
 */
export class Foundation1763780000000 implements MigrationInterface {
  name = 'Foundation1763780000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(rlsFunctionsSql);
    await q.query(`
CREATE TABLE tenants (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL,
  credit_balance bigint NOT NULL DEFAULT 0 CHECK (credit_balance >= 0),
  locked boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE workspaces (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid NOT NULL REFERENCES tenants(id),
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX workspaces_tenant_idx ON workspaces (tenant_id);

CREATE TABLE users (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  display_name text NOT NULL,
  email text,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memberships (
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  user_id uuid NOT NULL REFERENCES users(id),
  role text NOT NULL DEFAULT 'member',
  is_default boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX memberships_user_idx ON memberships (user_id);

-- API keys and MCP tokens share one table; kind tells them apart.
CREATE TABLE api_keys (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  user_id uuid NOT NULL REFERENCES users(id),
  kind text NOT NULL CHECK (kind IN ('api_key', 'mcp_token')),
  name text NOT NULL,
  scopes text[] NOT NULL DEFAULT '{}',
  prefix text NOT NULL,
  key_hash char(64) NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz
);
CREATE INDEX api_keys_user_idx ON api_keys (user_id, kind, created_at DESC);

CREATE TABLE api_key_daily_usage (
  api_key_id uuid NOT NULL REFERENCES api_keys(id),
  day date NOT NULL,
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  user_id uuid NOT NULL REFERENCES users(id),
  request_count bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (api_key_id, day)
);

CREATE TABLE nodes (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  type text NOT NULL,
  name text NOT NULL,
  properties jsonb NOT NULL DEFAULT '{}',
  importance_score double precision NOT NULL DEFAULT 0 CHECK (importance_score BETWEEN 0 AND 1),
  base_salience double precision NOT NULL DEFAULT 0.5 CHECK (base_salience BETWEEN 0 AND 1),
  reference_count integer NOT NULL DEFAULT 0,
  connection_id uuid,
  embedding vector(512),
  has_embedding boolean GENERATED ALWAYS AS (embedding IS NOT NULL) STORED,
  embedding_error text,
  last_touch_at timestamptz NOT NULL DEFAULT now(),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  is_deleted boolean NOT NULL DEFAULT false,
  deleted_at timestamptz,
  UNIQUE (workspace_id, id)
);
-- 512 floats are just over the TOAST threshold: keep them inline so scans never detoast.
ALTER TABLE nodes ALTER COLUMN embedding SET STORAGE PLAIN;
CREATE INDEX nodes_workspace_type_idx ON nodes (workspace_id, type, created_at) WHERE NOT is_deleted;
CREATE INDEX nodes_workspace_importance_idx ON nodes (workspace_id, importance_score DESC) WHERE NOT is_deleted;
CREATE INDEX nodes_embedding_hnsw_idx ON nodes USING hnsw (embedding vector_cosine_ops);

CREATE TABLE edges (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  type text NOT NULL,
  source_node_id uuid NOT NULL,
  target_node_id uuid NOT NULL,
  properties jsonb NOT NULL DEFAULT '{}',
  reasoning text,
  evidence text,
  created_at timestamptz NOT NULL DEFAULT now(),
  is_deleted boolean NOT NULL DEFAULT false,
  deleted_at timestamptz,
  -- Both ends live in the edge's own workspace: the database refuses anything else.
  FOREIGN KEY (workspace_id, source_node_id) REFERENCES nodes (workspace_id, id),
  FOREIGN KEY (workspace_id, target_node_id) REFERENCES nodes (workspace_id, id)
);
CREATE INDEX edges_source_idx ON edges (workspace_id, source_node_id) WHERE NOT is_deleted;
CREATE INDEX edges_target_idx ON edges (workspace_id, target_node_id) WHERE NOT is_deleted;
CREATE INDEX edges_type_idx ON edges (workspace_id, type) WHERE NOT is_deleted;

CREATE TABLE type_catalog (
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  kind text NOT NULL CHECK (kind IN ('node', 'edge')),
  name text NOT NULL,
  display_name text,
  description text,
  row_count bigint NOT NULL DEFAULT 0,
  last_seen_at timestamptz,
  common_property_keys text[] NOT NULL DEFAULT '{}',
  properties jsonb,
  is_deleted boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, kind, name)
);

CREATE TABLE credit_ledger (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid NOT NULL REFERENCES tenants(id),
  -- NULL for tenant-level rows (grants by an operator), which no workspace session can see.
  workspace_id uuid REFERENCES workspaces(id),
  kind text NOT NULL,
  amount integer NOT NULL,
  linked_event_id uuid REFERENCES credit_ledger(id),
  idempotency_key text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX credit_ledger_idempotency_idx ON credit_ledger (workspace_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
-- At most one refund per reservation.
CREATE UNIQUE INDEX credit_ledger_one_refund_idx ON credit_ledger (linked_event_id) WHERE amount > 0;
CREATE INDEX credit_ledger_tenant_idx ON credit_ledger (tenant_id, created_at);

CREATE TABLE prompt_runs (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  correlation_id uuid NOT NULL,
  prompt_kind text NOT NULL,
  source_hash char(64) NOT NULL,
  intent text NOT NULL CHECK (intent IN ('update', 'query', 'both')),
  status text NOT NULL CHECK (status IN ('ok', 'error')),
  node_count integer NOT NULL DEFAULT 0,
  edge_count integer NOT NULL DEFAULT 0,
  credits_used integer NOT NULL DEFAULT 0,
  linked_credit_ledger_id uuid REFERENCES credit_ledger(id),
  summary varchar(500) NOT NULL DEFAULT '',
  error_code text,
  duration_ms integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workspace_id, correlation_id)
);

-- Side effects that must follow a commit leave the transaction through this table.
CREATE TABLE outbox (
  id bigserial PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  event_type text NOT NULL,
  aggregate_id uuid NOT NULL,
  payload jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  dispatched_at timestamptz,
  attempts integer NOT NULL DEFAULT 0,
  last_error text
);
CREATE INDEX outbox_pending_idx ON outbox (workspace_id, id) WHERE dispatched_at IS NULL;

CREATE TABLE events (
  id bigserial PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  event_type text NOT NULL,
  payload jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_type_idx ON events (workspace_id, event_type, created_at DESC);

-- The outbox sweeper needs to know which workspaces have pending rows without reading them;
-- this definer function (owned by the migration role, which bypasses RLS) tells only that.
CREATE FUNCTION weft_outbox_pending_workspaces(min_age interval) RETURNS SETOF uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$ SELECT DISTINCT workspace_id FROM outbox WHERE dispatched_at IS NULL AND created_at <= now() - min_age $$;
`);
    // A user sees their memberships in every workspace (to pick one); a workspace sees its members.
    await q.query(workspaceRlsSql('memberships', `workspace_id = ${CURRENT_WORKSPACE} OR user_id = ${CURRENT_USER}`));
    // Credentials belong to their user; authentication finds a row only by knowing its secret's hash.
    await q.query(
      workspaceRlsSql(
        'api_keys',
        `user_id = ${CURRENT_USER} OR key_hash = weft_current_key_hash()`,
        `user_id = ${CURRENT_USER}`,
      ),
    );
    await q.query(workspaceRlsSql('api_key_daily_usage', `user_id = ${CURRENT_USER}`));
    for (const table of ['nodes', 'edges', 'type_catalog', 'credit_ledger', 'prompt_runs', 'outbox', 'events']) {
      await q.query(workspaceRlsSql(table));
    }
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION IF EXISTS weft_outbox_pending_workspaces(interval);
DROP TABLE IF EXISTS events, outbox, prompt_runs, credit_ledger, type_catalog, edges, nodes,
  api_key_daily_usage, api_keys, memberships, users, workspaces, tenants;
DROP FUNCTION IF EXISTS weft_current_workspace(), weft_current_user(), weft_current_key_hash();
`);
  }
}
