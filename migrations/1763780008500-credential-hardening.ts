import type { MigrationInterface, QueryRunner } from 'typeorm';
import { CURRENT_USER, CURRENT_WORKSPACE } from './rls';

/**
 * The application roles: every role other than the owner that may read `outbox`. Migrations do not
 * know the application role's name (it is configuration); set-up's default privileges granted it
 * every table, so this finds it (as 1763780007200-graph-name-search.ts does).
 */
async function appRoles(q: QueryRunner): Promise<string[]> {
  const rows: { role: string }[] = await q.query(
    `SELECT DISTINCT quote_ident(grantee) AS role FROM information_schema.role_table_grants
     WHERE table_schema = 'public' AND table_name = 'outbox' AND privilege_type = 'SELECT' AND grantee <> current_user`,
  );
  return rows.map((row) => row.role);
}

/**
 * Credentials and grants, hardened:
 * - user JWTs carry a `jti`; a revoked one is listed in `revoked_tokens` (written by the operator
 *   CLI on the owner connection; the app role may only read it) and refused at authentication;
 * - the key and MCP lookups also return the credential's expiry, so a child's can be capped at it;
 * - a session may add memberships only to its own workspace (the old WITH CHECK let a user insert
 *   itself into any workspace);
 * - the outbox's definer function is no longer executable by PUBLIC;
 * - the app role keeps only what the code needs on the tables without RLS: reading tenants and
 *   workspaces, and changing a tenant's balance. Users and the migrations table are not its business.
 */
export class CredentialHardening1763780008500 implements MigrationInterface {
  name = 'CredentialHardening1763780008500';

  async up(q: QueryRunner): Promise<void> {
    const roles = await appRoles(q);
    await q.query(`
CREATE TABLE revoked_tokens (
  jti uuid PRIMARY KEY,
  -- After this the token has expired anyway, and the row can go.
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz NOT NULL DEFAULT now()
);

DROP FUNCTION weft_authenticate_key(text);
CREATE FUNCTION weft_authenticate_key(p_hash text)
  RETURNS TABLE (id uuid, user_id uuid, workspace_id uuid, tenant_id uuid, kind text, scopes text[], usable boolean,
                 expires_at timestamptz)
  LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = public AS $$
DECLARE
  k record;
BEGIN
  PERFORM set_config('app.key_hash', p_hash, true);
  SELECT a.id, a.user_id, a.workspace_id, w.tenant_id, a.kind, a.scopes, a.expires_at,
         (a.revoked_at IS NULL AND (a.expires_at IS NULL OR a.expires_at > now())) AS live
    INTO k
    FROM api_keys a JOIN workspaces w ON w.id = a.workspace_id
    WHERE a.key_hash = p_hash AND a.kind = 'api_key';
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM set_config('app.user_id', k.user_id::text, true);
  RETURN QUERY SELECT k.id, k.user_id, k.workspace_id, k.tenant_id, k.kind, k.scopes,
    k.live AND EXISTS (SELECT 1 FROM memberships ms WHERE ms.workspace_id = k.workspace_id AND ms.user_id = k.user_id),
    k.expires_at;
END $$;

DROP FUNCTION weft_authenticate_mcp(uuid, uuid);
CREATE FUNCTION weft_authenticate_mcp(p_user uuid, p_token uuid)
  RETURNS TABLE (id uuid, user_id uuid, workspace_id uuid, tenant_id uuid, kind text, scopes text[], usable boolean,
                 expires_at timestamptz)
  LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = public AS $$
BEGIN
  PERFORM set_config('app.user_id', p_user::text, true);
  RETURN QUERY
    SELECT k.id, k.user_id, k.workspace_id, w.tenant_id, k.kind, k.scopes,
           (k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())), k.expires_at
    FROM api_keys k
    JOIN workspaces w ON w.id = k.workspace_id
    JOIN memberships ms ON ms.workspace_id = k.workspace_id AND ms.user_id = k.user_id
    WHERE k.id = p_token AND k.kind = 'mcp_token' AND k.user_id = p_user;
END $$;

-- A revoked JWT is one row (NULL, NULL, true), whatever it asks for; else as before (the requested
-- workspace, else the JWT's, else the default).
DROP FUNCTION weft_authenticate_user(uuid, uuid, uuid);
CREATE FUNCTION weft_authenticate_user(p_user uuid, p_requested uuid, p_claimed uuid, p_jti uuid)
  RETURNS TABLE (workspace_id uuid, tenant_id uuid, revoked boolean)
  LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = public AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM revoked_tokens r WHERE r.jti = p_jti) THEN
    RETURN QUERY SELECT NULL::uuid, NULL::uuid, true;
    RETURN;
  END IF;
  PERFORM set_config('app.user_id', p_user::text, true);
  RETURN QUERY
    SELECT ms.workspace_id, w.tenant_id, false
    FROM memberships ms JOIN workspaces w ON w.id = ms.workspace_id
    WHERE ms.user_id = p_user AND (p_requested IS NULL OR ms.workspace_id = p_requested)
    ORDER BY (ms.workspace_id = p_claimed) DESC NULLS LAST, ms.is_default DESC, ms.created_at
    LIMIT 1;
END $$;

-- A user still sees its memberships in every workspace (to pick one), but writes only its own workspace's.
DROP POLICY memberships_isolation ON memberships;
CREATE POLICY memberships_isolation ON memberships
  USING (workspace_id = ${CURRENT_WORKSPACE} OR user_id = ${CURRENT_USER})
  WITH CHECK (workspace_id = ${CURRENT_WORKSPACE});

REVOKE ALL ON FUNCTION weft_outbox_pending_workspaces(interval) FROM PUBLIC;
`);
    for (const role of roles) {
      await q.query(`
GRANT EXECUTE ON FUNCTION weft_outbox_pending_workspaces(interval) TO ${role};
REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON tenants, workspaces, revoked_tokens FROM ${role};
GRANT UPDATE (credit_balance) ON tenants TO ${role};
REVOKE ALL ON users, typeorm_migrations FROM ${role};`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    const roles = await appRoles(q);
    for (const role of roles) {
      await q.query(
        `GRANT SELECT, INSERT, UPDATE, DELETE ON tenants, workspaces, users, typeorm_migrations TO ${role}`,
      );
    }
    await q.query(`
GRANT EXECUTE ON FUNCTION weft_outbox_pending_workspaces(interval) TO PUBLIC;
DROP POLICY memberships_isolation ON memberships;
CREATE POLICY memberships_isolation ON memberships
  USING (workspace_id = ${CURRENT_WORKSPACE} OR user_id = ${CURRENT_USER})
  WITH CHECK (workspace_id = ${CURRENT_WORKSPACE} OR user_id = ${CURRENT_USER});

DROP FUNCTION weft_authenticate_user(uuid, uuid, uuid, uuid);
CREATE FUNCTION weft_authenticate_user(p_user uuid, p_requested uuid, p_claimed uuid)
  RETURNS TABLE (workspace_id uuid, tenant_id uuid)
  LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = public AS $$
BEGIN
  PERFORM set_config('app.user_id', p_user::text, true);
  RETURN QUERY
    SELECT ms.workspace_id, w.tenant_id FROM memberships ms JOIN workspaces w ON w.id = ms.workspace_id
    WHERE ms.user_id = p_user AND (p_requested IS NULL OR ms.workspace_id = p_requested)
    ORDER BY (ms.workspace_id = p_claimed) DESC NULLS LAST, ms.is_default DESC, ms.created_at
    LIMIT 1;
END $$;

DROP FUNCTION weft_authenticate_mcp(uuid, uuid);
CREATE FUNCTION weft_authenticate_mcp(p_user uuid, p_token uuid)
  RETURNS TABLE (id uuid, user_id uuid, workspace_id uuid, tenant_id uuid, kind text, scopes text[], usable boolean)
  LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = public AS $$
BEGIN
  PERFORM set_config('app.user_id', p_user::text, true);
  RETURN QUERY
    SELECT k.id, k.user_id, k.workspace_id, w.tenant_id, k.kind, k.scopes,
           (k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now()))
    FROM api_keys k
    JOIN workspaces w ON w.id = k.workspace_id
    JOIN memberships ms ON ms.workspace_id = k.workspace_id AND ms.user_id = k.user_id
    WHERE k.id = p_token AND k.kind = 'mcp_token' AND k.user_id = p_user;
END $$;

DROP FUNCTION weft_authenticate_key(text);
CREATE FUNCTION weft_authenticate_key(p_hash text)
  RETURNS TABLE (id uuid, user_id uuid, workspace_id uuid, tenant_id uuid, kind text, scopes text[], usable boolean)
  LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = public AS $$
DECLARE
  k record;
BEGIN
  PERFORM set_config('app.key_hash', p_hash, true);
  SELECT a.id, a.user_id, a.workspace_id, w.tenant_id, a.kind, a.scopes,
         (a.revoked_at IS NULL AND (a.expires_at IS NULL OR a.expires_at > now())) AS live
    INTO k
    FROM api_keys a JOIN workspaces w ON w.id = a.workspace_id
    WHERE a.key_hash = p_hash AND a.kind = 'api_key';
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM set_config('app.user_id', k.user_id::text, true);
  RETURN QUERY SELECT k.id, k.user_id, k.workspace_id, k.tenant_id, k.kind, k.scopes,
    k.live AND EXISTS (SELECT 1 FROM memberships ms WHERE ms.workspace_id = k.workspace_id AND ms.user_id = k.user_id);
END $$;

DROP TABLE revoked_tokens;`);
  }
}
