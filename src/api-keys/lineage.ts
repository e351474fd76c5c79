import type { EntityManager } from 'typeorm';
import type { CredentialRef } from '../platform/auth/principal';
import { queryRows } from '../platform/db/query';
import type { Credential, MintedByKind } from './entities';

/** What a credential minted by `minter` records (NM-5); a JWT without a jti is not known. */
export function mintedBy(minter: CredentialRef): Pick<Credential, 'mintedByKind' | 'mintedById'> {
  if (minter.id === undefined) return { mintedByKind: null, mintedById: null };
  return { mintedByKind: minter.kind, mintedById: minter.id };
}

/** How deep a line of keys minting keys is followed; a longer one is cut there (its top counts as its root). */
const MAX_DEPTH = 32;

/**
 * A key's or token's line: its own id first, then each key or token that minted the one before, and
 * what minted the topmost (a person's JWT, a grant, provisioning, or null when not known). Read as the
 * caller's user: a credential only ever mints for its own user, so the whole line is theirs (RLS).
 */
export async function lineOf(
  m: EntityManager,
  credentialId: string,
): Promise<{ rows: string[]; origin: { kind: MintedByKind; id: string | null } | null }> {
  const line = await queryRows<{ id: string; minted_by_kind: MintedByKind | null; minted_by_id: string | null }>(
    m,
    `WITH RECURSIVE up AS (
       SELECT id, minted_by_kind, minted_by_id, 0 AS depth FROM api_keys WHERE id = $1
       UNION ALL
       SELECT k.id, k.minted_by_kind, k.minted_by_id, up.depth + 1
       FROM up JOIN api_keys k
         ON k.id = CASE WHEN up.minted_by_kind IN ('api_key', 'mcp_token') THEN up.minted_by_id::uuid END
       WHERE up.depth < $2
     )
     SELECT id, minted_by_kind, minted_by_id FROM up ORDER BY depth`,
    [credentialId, MAX_DEPTH],
  );
  const top = line.at(-1);
  return {
    rows: line.map((row) => row.id),
    origin: top?.minted_by_kind ? { kind: top.minted_by_kind, id: top.minted_by_id } : null,
  };
}

/**
 * Whether `other` stands for `credential` (NM-5): it is that credential, or was minted from it at any
 * remove, or both grew from one key that no key minted (siblings, cousins, that key itself). A person's
 * session (a user JWT) is minted by no credential, so it stands only for itself; the keys it mints stand
 * for it. What a key minted before its line was recorded is not known, and counts as its own line.
 */
export async function standsFor(
  m: EntityManager,
  credential: { kind: CredentialRef['kind']; id?: string | null },
  other: { kind: CredentialRef['kind']; id?: string | null },
): Promise<boolean> {
  if (credential.id == null || other.id == null) return false;
  if (credential.kind === other.kind && credential.id === other.id) return true;
  if (other.kind === 'user_jwt') return false;
  const theirs = await lineOf(m, other.id);
  if (credential.kind === 'user_jwt') {
    return theirs.origin?.kind === 'user_jwt' && theirs.origin.id === credential.id;
  }
  const ours = await lineOf(m, credential.id);
  const root = ours.rows.at(-1);
  return root !== undefined && theirs.rows.at(-1) === root;
}
