import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';
import { workspaceRlsSql } from './rls';

/**
 * Weft as an OAuth 2.1 authorization server for `/mcp` (issue 33, src/oauth/).
 *
 * - `oauth_clients`: dynamically registered clients (RFC 7591). A client belongs to no workspace:
 *   anyone may register one, its id is public by design, and it holds no tenant data (a name and
 *   redirect URIs), so it has no RLS, like `operator_tokens`. What a client may do in a workspace is
 *   a grant's business, and grants are workspace rows.
 * - `oauth_grants`, `oauth_codes`, `oauth_refresh_tokens`: a person's consent for a client in one
 *   workspace, its one-time authorization codes and its rotating refresh tokens; forced RLS like
 *   every workspace table. Codes and refresh tokens are kept as SHA-256 only, as API keys are.
 * - `api_keys.oauth_grant_id`: the access tokens of a grant are MCP-token credentials; revoking the
 *   grant revokes them.
 * - `weft_oauth_secret`: the token endpoint knows a code or refresh token before it knows the
 *   workspace, so this definer function names the workspace of a hash (as webhook slugs are found).
 */
export class OAuth1763780011600 implements MigrationInterface {
  name = 'OAuth1763780011600';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE oauth_clients (
  id text PRIMARY KEY,
  client_name text,
  redirect_uris text[] NOT NULL,
  registered_from text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz
);
CREATE INDEX oauth_clients_source ON oauth_clients (registered_from, created_at);

CREATE TABLE oauth_grants (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  user_id uuid NOT NULL,
  client_id text NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
  client_name text,
  scopes text[] NOT NULL,
  resource text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz,
  revoked_reason text
);
CREATE INDEX oauth_grants_workspace ON oauth_grants (workspace_id, created_at);

CREATE TABLE oauth_codes (
  code_hash text PRIMARY KEY,
  grant_id uuid NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  redirect_uri text NOT NULL,
  code_challenge text NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);

CREATE TABLE oauth_refresh_tokens (
  token_hash text PRIMARY KEY,
  grant_id uuid NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id);

ALTER TABLE api_keys ADD COLUMN oauth_grant_id uuid REFERENCES oauth_grants(id) ON DELETE SET NULL;
CREATE INDEX api_keys_oauth_grant ON api_keys (oauth_grant_id) WHERE oauth_grant_id IS NOT NULL;
${workspaceRlsSql('oauth_grants')}
${workspaceRlsSql('oauth_codes')}
${workspaceRlsSql('oauth_refresh_tokens')}

CREATE FUNCTION weft_oauth_secret(p_hash text)
  RETURNS TABLE (kind text, workspace_id uuid, user_id uuid)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$
    SELECT 'code', c.workspace_id, g.user_id FROM oauth_codes c JOIN oauth_grants g ON g.id = c.grant_id
      WHERE c.code_hash = p_hash
    UNION ALL
    SELECT 'refresh', r.workspace_id, g.user_id FROM oauth_refresh_tokens r JOIN oauth_grants g ON g.id = r.grant_id
      WHERE r.token_hash = p_hash
  $$;
REVOKE ALL ON FUNCTION weft_oauth_secret(text) FROM PUBLIC;
`);
    await grantToAppRole(q, 'weft_oauth_secret(text)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION weft_oauth_secret(text);
ALTER TABLE api_keys DROP COLUMN oauth_grant_id;
DROP TABLE oauth_refresh_tokens;
DROP TABLE oauth_codes;
DROP TABLE oauth_grants;
DROP TABLE oauth_clients;
`);
  }
}
