import type { EntityManager } from 'typeorm';
/**
 * Deferred work (a run's step, a trigger's dispatch) acts as the credential that started it, so
 * before it acts it re-checks that identity: the user is still a member of the workspace, and the
 * credential is neither revoked nor past the expiry stored with the work. A user JWT's revocation
 * row is purged once the JWT has expired, which is why the stored expiry is checked as well.
 * Key rows are visible to their own user only: run it with `app.user_id` set to that user.
 */
export const CREDENTIAL_LIVE_SQL = `SELECT (
    EXISTS (SELECT 1 FROM memberships WHERE workspace_id = $2::uuid AND user_id = $3::uuid)
    AND ($5::timestamptz IS NULL OR $5::timestamptz > now())
    AND CASE WHEN $4::text = 'user_jwt'
      THEN NOT EXISTS (SELECT 1 FROM revoked_tokens WHERE jti = $1::uuid)
      ELSE EXISTS (SELECT 1 FROM api_keys k WHERE k.id = $1::uuid AND k.workspace_id = $2::uuid
        AND k.user_id = $3::uuid AND k.kind = $4::text AND k.revoked_at IS NULL
        AND (k.expires_at IS NULL OR k.expires_at > now()))
    END) AS live`;

/** The identity deferred work acts as, as it was stored when the work was started. */
export interface StoredIdentity {
  workspaceId: string;
  userId: string;
  kind: string;
  /** The key's row id, or the user JWT's jti. */
  credentialId: string | null;
  expiresAt: string | null;
}

/** CREDENTIAL_LIVE_SQL's parameters, in order. */
export const credentialLiveParams = (identity: StoredIdentity) => [
  identity.credentialId,
  identity.workspaceId,
  identity.userId,
  identity.kind,
  identity.expiresAt,
];

/**
 * Whether a stored identity may still act, checked inside the caller's transaction as that identity's
 * user (key rows are visible to their own user only), then handing the transaction back to `actingUserId`.
 */
export async function storedIdentityLive(
  m: EntityManager,
  identity: StoredIdentity,
  actingUserId: string,
): Promise<boolean> {
  await m.query(`SELECT set_config('app.user_id', $1, true)`, [identity.userId]);
  const [row] = (await m.query(CREDENTIAL_LIVE_SQL, credentialLiveParams(identity))) as { live: boolean }[];
  await m.query(`SELECT set_config('app.user_id', $1, true)`, [actingUserId]);
  return row?.live === true;
}
