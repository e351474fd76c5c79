import type { EntityManager } from 'typeorm';
/**
 * Deferred work (a run's step, a callback's delivery, a change-set's apply) acts as the credential
 * that started it, so before it acts it re-checks that identity: the user is still a member of the
 * workspace, and the credential is neither revoked nor past the expiry stored with the work. A user
 * JWT's revocation row is purged once the JWT has expired, which is why the stored expiry is checked
 * as well.
 */

/** The identity deferred work acts as, as it was stored when the work was started. */
export interface StoredIdentity {
  workspaceId: string;
  userId: string;
  kind: string;
  /** The key's row id, or the user JWT's jti. */
  credentialId: string | null;
  expiresAt: string | Date | null;
}

/**
 * Whether a stored identity may still act, checked inside the caller's transaction in one statement:
 * `weft_credential_live` (migrations/1763780015000-credential-live.ts) reads the key and membership rows
 * as the identity's user (they are visible to their own user only) and hands the transaction back to
 * the user it acted as before.
 */
export async function storedIdentityLive(m: EntityManager, identity: StoredIdentity): Promise<boolean> {
  const [row] = (await m.query(
    `SELECT weft_credential_live($1::uuid, $2::uuid, $3::uuid, $4::text, $5::timestamptz) AS live`,
    [identity.credentialId, identity.workspaceId, identity.userId, identity.kind, identity.expiresAt],
  )) as { live: boolean }[];
  return row?.live === true;
}

/** A principal as deferred work stores it beside itself (a trigger's, a schedule's, a callback's subscription's). */
export interface StoredPrincipal {
  userId: string;
  credential: { kind: string; id?: string | null; expiresAt?: string | null };
}

/** Whether a stored principal may still act in `workspaceId` (storedIdentityLive). */
export const storedPrincipalLive = (m: EntityManager, workspaceId: string, principal: StoredPrincipal) =>
  storedIdentityLive(m, {
    workspaceId,
    userId: principal.userId,
    kind: principal.credential.kind,
    credentialId: principal.credential.id ?? null,
    expiresAt: principal.credential.expiresAt ?? null,
  });
