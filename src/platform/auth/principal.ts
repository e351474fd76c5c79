import { credentialProofOf } from '../db/credential-proof';
import { readPositionOf } from '../db/standby';
import type { ScopeName } from './scopes';

/**
 * The credential a request came with: a user JWT (its `jti`), an API key or an MCP token (its row).
 * `expiresAt` is null for a key that never expires, undefined where it is not known.
 */
export type CredentialRef =
  | { kind: 'user_jwt'; id?: string; expiresAt?: Date | null }
  | { kind: 'api_key' | 'mcp_token'; id: string; expiresAt?: Date | null };

/** The authenticated caller, and the one workspace this request reads and writes. */
export interface Principal {
  userId: string;
  workspaceId: string;
  tenantId: string;
  scopes: ReadonlySet<ScopeName>;
  credential: CredentialRef;
}

/**
 * The database scope a principal's unit of work runs in, with the credential the graph's version
 * rows record (issue 31), and the credential lookup the request still owes, if any (its first
 * scoped read carries it, credential-proof.ts), and where its reads may go (standby.ts).
 */
export const scopeOf = (principal: Principal) => ({
  workspaceId: principal.workspaceId,
  userId: principal.userId,
  actor: { credentialKind: principal.credential.kind, credentialId: principal.credential.id },
  proof: credentialProofOf(principal),
  position: readPositionOf(principal),
});

/**
 * A key or MCP token acts in its own workspace only; a user JWT stands for its user, in every
 * workspace the user belongs to. Undefined for a user JWT.
 */
export const boundWorkspace = (principal: Principal): string | undefined =>
  principal.credential.kind === 'user_jwt' ? undefined : principal.workspaceId;

/**
 * The expiry of a credential made by `principal`: what was asked for, but never later than the
 * creating key's or token's own expiry, so an expiring key cannot mint a longer-lived one. A user
 * JWT stands for its user (its lifetime is a session's), so it does not cap what it creates.
 */
export function childExpiry(principal: Principal, requested: Date | null): Date | null {
  const parent = principal.credential.kind === 'user_jwt' ? null : (principal.credential.expiresAt ?? null);
  if (!parent) return requested;
  if (!requested) return parent;
  return requested < parent ? requested : parent;
}
