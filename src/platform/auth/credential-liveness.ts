import type { EntityManager } from 'typeorm';
import type { Scope, ScopedRead, StandingCredential } from '../db/unit-of-work';
import type { Principal } from './principal';
import { scopeOf } from './principal';
import type { StoredPrincipal } from './stored-principal';
/**
 * Deferred work (a run's step, a callback's delivery, a change-set's apply) acts as the credential
 * that started it, so before it acts it re-checks that identity: the user is still a member of the
 * workspace, and the credential is neither revoked nor past the expiry stored with the work. A user
 * JWT's revocation row is purged once the JWT has expired, which is why the stored expiry is checked
 * as well.
 */

/**
 * Whether a stored principal may still act in `workspaceId`, checked inside the caller's transaction
 * in one statement: `weft_credential_live` (migrations/1763780015000-credential-live.ts; its jsonb
 * form, which reads the stored credential, in migrations/1763780015500-stored-principal.ts) reads the
 * key and membership rows as the principal's user (they are visible to their own user only) and hands
 * the transaction back to the user it acted as before.
 */
export async function storedPrincipalLive(
  m: EntityManager,
  workspaceId: string,
  principal: Pick<StoredPrincipal, 'userId' | 'credential'>,
): Promise<boolean> {
  const [row] = (await m.query(`SELECT weft_credential_live($1::jsonb, $2::uuid, $3::uuid) AS live`, [
    JSON.stringify(principal.credential),
    workspaceId,
    principal.userId,
  ])) as { live: boolean }[];
  return row?.live === true;
}

/** Why a credential no longer stands: its user left the workspace, it expired, or it was revoked. */
export type CredentialLapse = 'member_removed' | 'credential_expired' | 'credential_revoked';

/** A principal's credential as a scoped read re-checks it (Scope.standing: an open stream's reads). */
export const standingOf = (principal: Principal): StandingCredential => ({
  credentialId: principal.credential.id ?? null,
  kind: principal.credential.kind,
  expiresAt: principal.credential.expiresAt ? principal.credential.expiresAt.toISOString() : null,
});

/** The scope of an open stream's reads: the principal's, each read re-checking its credential. */
export const standingScopeOf = (principal: Principal): Scope => ({
  ...scopeOf(principal),
  standing: standingOf(principal),
});

/**
 * Why `principal`'s credential failed `weft_credential_live`, for the client (a stream's final event):
 * past the expiry it was issued with, else no longer a member, else past its key row's expiry now, else
 * revoked. Read as the principal's user, who sees their own memberships and keys.
 */
export async function credentialLapse(read: ScopedRead, principal: Principal): Promise<CredentialLapse> {
  const { credential } = principal;
  if (credential.expiresAt && credential.expiresAt.getTime() <= Date.now()) return 'credential_expired';
  const [row] = await read<{ member: boolean; expired: boolean }>(
    { workspaceId: principal.workspaceId, userId: principal.userId },
    `SELECT EXISTS (SELECT 1 FROM memberships m WHERE m.workspace_id = $1::uuid AND m.user_id = $2::uuid) AS member,
       EXISTS (SELECT 1 FROM api_keys k WHERE k.id = $3::uuid AND k.revoked_at IS NULL AND k.expires_at <= now())
         AS expired`,
    [principal.workspaceId, principal.userId, credential.kind === 'user_jwt' ? null : credential.id],
  );
  if (row && !row.member) return 'member_removed';
  return row?.expired ? 'credential_expired' : 'credential_revoked';
}
