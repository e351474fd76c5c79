import type { CredentialRef, Principal } from './principal';
import type { ScopeName } from './scopes';

/**
 * A principal as deferred work stores it (jsonb) beside itself, frozen when the work was started: a
 * run's steps, a webhook trigger's and a run schedule's runs, a callback subscription's deliveries
 * (who and which credential only), a staged change-set's apply (its `credential`, the user in
 * `staged_by`). One spelling in every table (migrations/1763780015500-stored-principal.ts made it
 * so), read in SQL in one place: `weft_credential_live(credential jsonb, workspace, user)`.
 */
export interface StoredPrincipal {
  userId: string;
  tenantId: string;
  /** The scopes it held: work started from it acts with these, never more. */
  scopes: string[];
  credential: StoredCredential;
}

export interface StoredCredential {
  kind: CredentialRef['kind'];
  /** The key's or MCP token's row id, or the user JWT's jti. */
  id: string | null;
  /** ISO 8601; null when it never expires or was not known (also read as null where a row lacks it). */
  expiresAt: string | null;
}

/** A credential as stored, whatever form its expiry came in (a principal's Date, a stored ISO string). */
export const freezeCredential = (credential: {
  kind: string;
  id?: string | null;
  expiresAt?: Date | string | null;
}): StoredCredential => ({
  kind: credential.kind as StoredCredential['kind'],
  id: credential.id ?? null,
  expiresAt: credential.expiresAt ? new Date(credential.expiresAt).toISOString() : null,
});

/** The caller as deferred work will act as it: user, tenant, scopes and credential, frozen now. */
export const freeze = (principal: Principal): StoredPrincipal => ({
  userId: principal.userId,
  tenantId: principal.tenantId,
  scopes: [...principal.scopes],
  credential: freezeCredential(principal.credential),
});

/** The principal a stored one acts as in `workspaceId` (its credential's expiry a Date again). */
export const thaw = (stored: StoredPrincipal, workspaceId: string): Principal => ({
  userId: stored.userId,
  workspaceId,
  tenantId: stored.tenantId,
  scopes: new Set(stored.scopes as ScopeName[]),
  credential: {
    kind: stored.credential.kind,
    id: stored.credential.id ?? undefined,
    expiresAt: stored.credential.expiresAt ? new Date(stored.credential.expiresAt) : null,
  } as CredentialRef,
});
