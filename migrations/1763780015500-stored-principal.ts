import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Rows stored in an earlier spelling, rewritten to the one (a row already in it is left alone). */
export const STORED_PRINCIPAL_REWRITE = `
UPDATE run_executions SET principal = jsonb_build_object(
    'userId', user_id,
    'tenantId', principal->'tenantId',
    'scopes', principal->'scopes',
    'credential', jsonb_build_object(
      'kind', principal->'credential'->'kind',
      'id', coalesce(principal->'credential'->'id', 'null'::jsonb),
      'expiresAt', coalesce(principal->'credential'->'expires_at', 'null'::jsonb)))
  WHERE NOT principal ? 'userId';

UPDATE change_sets SET staged_by_credential = jsonb_build_object(
    'kind', staged_by_credential->'kind',
    'id', coalesce(staged_by_credential->'id', 'null'::jsonb),
    'expiresAt', coalesce(staged_by_credential->'expires_at', 'null'::jsonb))
  WHERE NOT staged_by_credential ? 'expiresAt';
`;

/**
 * One stored principal (issue 38 item 3, src/platform/auth/stored-principal.ts): deferred work keeps
 * the principal it acts as in one spelling, `{userId, tenantId, scopes, credential: {kind, id,
 * expiresAt}}`, and SQL reads a stored credential in one place.
 * - Rows already stored are rewritten here, so nothing reads two spellings: a run's principal gains
 *   its `userId` (its `user_id` column) and its credential's `expires_at` becomes `expiresAt`; a
 *   change-set's `staged_by_credential` the same. Triggers, schedules and callback subscriptions
 *   already stored `expiresAt` (a row without it reads as null, as before).
 * - `weft_credential_live(credential jsonb, workspace, user)` reads a stored credential and asks the
 *   check (`weft_credential_live(uuid, uuid, uuid, text, timestamptz)`, unchanged).
 */
export class StoredPrincipal1763780015500 implements MigrationInterface {
  name = 'StoredPrincipal1763780015500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
${STORED_PRINCIPAL_REWRITE}
CREATE FUNCTION weft_credential_live(p_credential jsonb, p_workspace uuid, p_user uuid) RETURNS boolean
  LANGUAGE sql VOLATILE SECURITY INVOKER SET search_path = public
  AS $$
    SELECT weft_credential_live((p_credential->>'id')::uuid, p_workspace, p_user, p_credential->>'kind',
      (p_credential->>'expiresAt')::timestamptz)
  $$;`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION weft_credential_live(jsonb, uuid, uuid);

UPDATE change_sets SET staged_by_credential = jsonb_build_object(
    'kind', staged_by_credential->'kind',
    'id', staged_by_credential->'id',
    'expires_at', staged_by_credential->'expiresAt');

UPDATE run_executions SET principal = jsonb_build_object(
    'tenantId', principal->'tenantId',
    'scopes', principal->'scopes',
    'credential', jsonb_build_object(
      'kind', principal->'credential'->'kind',
      'id', principal->'credential'->'id',
      'expires_at', principal->'credential'->'expiresAt'));`);
  }
}
