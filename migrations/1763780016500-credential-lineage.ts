import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 39 item 2 (NM-5): a key or MCP token records the credential that minted it, so separation of
 * duties can tell the agent's keys (the dispatching key and whatever it minted, before or after the
 * dispatch) from the person's. `minted_by_kind`: `user_jwt` (`minted_by_id` is its jti), `api_key` or
 * `mcp_token` (the minting row's id), `oauth_grant` (the grant a person consented to), `provisioning`
 * (`weft bootstrap`, no id); null where it is not known. The minting user is the row's own `user_id`:
 * a credential only ever mints for its own user.
 *
 * Backfilled where the rows say it: an OAuth access token names its grant, and `weft bootstrap` writes
 * the user and its key in one transaction (one `now()`), so a key created at its user's very instant
 * was provisioned. Other keys made before this column are unknown and count as minted by a person.
 */
export class CredentialLineage1763780016500 implements MigrationInterface {
  name = 'CredentialLineage1763780016500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE api_keys
  ADD COLUMN minted_by_kind text
    CHECK (minted_by_kind IN ('user_jwt', 'api_key', 'mcp_token', 'oauth_grant', 'provisioning')),
  ADD COLUMN minted_by_id text,
  -- An id exactly when the kind has one; a minting row's id is a uuid (the lineage walk casts it).
  ADD CONSTRAINT api_keys_minted_by_id_check
    CHECK ((minted_by_id IS NULL) = (minted_by_kind IS NULL OR minted_by_kind = 'provisioning')
      AND (minted_by_kind NOT IN ('api_key', 'mcp_token', 'oauth_grant')
        OR minted_by_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'));

UPDATE api_keys SET minted_by_kind = 'oauth_grant', minted_by_id = oauth_grant_id::text
  WHERE oauth_grant_id IS NOT NULL;
UPDATE api_keys k SET minted_by_kind = 'provisioning'
  FROM users u
  WHERE u.id = k.user_id AND k.kind = 'api_key' AND k.created_at = u.created_at AND k.minted_by_kind IS NULL;
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE api_keys
  DROP CONSTRAINT IF EXISTS api_keys_minted_by_id_check,
  DROP COLUMN IF EXISTS minted_by_id,
  DROP COLUMN IF EXISTS minted_by_kind;
`);
  }
}
