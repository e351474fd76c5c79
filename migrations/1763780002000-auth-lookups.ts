import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Authentication in one round trip. Each function sets the scope it needs with
 * set_config(..., true) and then reads under RLS as the calling role (SECURITY INVOKER), all in
 * one statement: the setting lives for that statement's implicit transaction and no longer, so a
 * pooled connection never carries it over. The same rule as the unit of work, in four fewer
 * round trips on every request.
 */
export class AuthLookups1763780002000 implements MigrationInterface {
  name = 'AuthLookups1763780002000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE FUNCTION weft_authenticate_key(p_hash text)
  RETURNS TABLE (id uuid, user_id uuid, workspace_id uuid, tenant_id uuid, kind text, scopes text[], usable boolean)
  LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = public AS $$
BEGIN
  PERFORM set_config('app.key_hash', p_hash, true);
  RETURN QUERY
    SELECT k.id, k.user_id, k.workspace_id, w.tenant_id, k.kind, k.scopes,
           (k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now()))
    FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
    WHERE k.key_hash = p_hash AND k.kind = 'api_key';
END $$;

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

-- A user acts in the requested workspace, else the one its JWT names, else its default.
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
END $$;`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION IF EXISTS weft_authenticate_key(text);
DROP FUNCTION IF EXISTS weft_authenticate_mcp(uuid, uuid);
DROP FUNCTION IF EXISTS weft_authenticate_user(uuid, uuid, uuid);`);
  }
}
