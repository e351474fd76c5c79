import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Whether a stored identity may still act (deferred work: a run's step, a callback, a change-set's
 * apply), in one statement (issue 27): it was `set_config('app.user_id', …)` (key and membership rows
 * are visible to their own user only), the check, and for some callers a second `set_config` back.
 * The function acts as the identity's user for the check alone and hands the transaction back to
 * whoever it acted as before. SECURITY INVOKER: RLS applies to every row it reads, as before.
 */
export class CredentialLive1763780015000 implements MigrationInterface {
  name = 'CredentialLive1763780015000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE FUNCTION weft_credential_live(
  p_credential uuid, p_workspace uuid, p_user uuid, p_kind text, p_expires timestamptz
) RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = public AS $$
DECLARE
  acting text := coalesce(current_setting('app.user_id', true), '');
  live boolean;
BEGIN
  PERFORM set_config('app.user_id', p_user::text, true);
  SELECT EXISTS (SELECT 1 FROM memberships WHERE workspace_id = p_workspace AND user_id = p_user)
    AND (p_expires IS NULL OR p_expires > now())
    AND CASE WHEN p_kind = 'user_jwt'
      THEN NOT EXISTS (SELECT 1 FROM revoked_tokens WHERE jti = p_credential)
      ELSE EXISTS (SELECT 1 FROM api_keys k WHERE k.id = p_credential AND k.workspace_id = p_workspace
        AND k.user_id = p_user AND k.kind = p_kind AND k.revoked_at IS NULL
        AND (k.expires_at IS NULL OR k.expires_at > now()))
    END
    INTO live;
  PERFORM set_config('app.user_id', acting, true);
  RETURN coalesce(live, false);
END $$;`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION weft_credential_live(uuid, uuid, uuid, text, timestamptz)`);
  }
}
