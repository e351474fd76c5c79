import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Issue 41, connectors: a workspace's remote MCP servers and OpenAPI-described HTTP APIs, whose
 * tools its agents and runs call as `<connector>.<tool>`. The secret part of `auth` is sealed
 * (AES-256-GCM under WEFT_ENCRYPTION_KEY, bound to the workspace and the connector's id); `auth_hint`
 * holds what may be shown (its type, a fingerprint and the last 4 characters, non-secret fields).
 * `tools` is the discovered list as registered; `version` grows at every refresh that changed it.
 */
export class Connectors1763780020000 implements MigrationInterface {
  name = 'Connectors1763780020000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE connectors (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  name text NOT NULL CHECK (name ~ '^[a-z][a-z0-9_]{1,30}$'),
  kind text NOT NULL CHECK (kind IN ('mcp', 'http')),
  -- The MCP endpoint, or the HTTP API's base URL.
  url text NOT NULL CHECK (length(url) <= 2048),
  openapi jsonb,
  auth_type text NOT NULL CHECK (auth_type IN ('none', 'bearer', 'header', 'oauth_client_credentials')),
  auth_sealed text,
  auth_hint jsonb NOT NULL DEFAULT '{}',
  timeout_seconds integer NOT NULL DEFAULT 30 CHECK (timeout_seconds BETWEEN 1 AND 300),
  max_response_bytes integer NOT NULL DEFAULT 1048576 CHECK (max_response_bytes > 0),
  credits_per_call integer NOT NULL DEFAULT 1 CHECK (credits_per_call BETWEEN 0 AND 100),
  tools jsonb NOT NULL DEFAULT '[]',
  version integer NOT NULL DEFAULT 1,
  created_by uuid NOT NULL REFERENCES users(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  refreshed_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((kind = 'http') = (openapi IS NOT NULL)),
  UNIQUE (workspace_id, name)
);
`);
    await q.query(workspaceRlsSql('connectors'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(dropWorkspaceRlsSql('connectors'));
    await q.query('DROP TABLE connectors');
  }
}
