import type { MigrationInterface, QueryRunner } from 'typeorm';

/** An API key acts only while its user is still a member of the key's workspace (as MCP tokens do). */
export class KeyMembership1763780007400 implements MigrationInterface {
  name = 'KeyMembership1763780007400';

  async up(q: QueryRunner): Promise<void> {
    // Memberships are visible to their user only, so the user is scoped once the key names it.
    await q.query(`
CREATE OR REPLACE FUNCTION weft_authenticate_key(p_hash text)
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
END $$;`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE OR REPLACE FUNCTION weft_authenticate_key(p_hash text)
  RETURNS TABLE (id uuid, user_id uuid, workspace_id uuid, tenant_id uuid, kind text, scopes text[], usable boolean)
  LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = public AS $$
BEGIN
  PERFORM set_config('app.key_hash', p_hash, true);
  RETURN QUERY
    SELECT k.id, k.user_id, k.workspace_id, w.tenant_id, k.kind, k.scopes,
           (k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now()))
    FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
    WHERE k.key_hash = p_hash AND k.kind = 'api_key';
END $$;`);
  }
}
