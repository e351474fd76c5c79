import type { EntityManager } from 'typeorm';
import type { ScopeName } from '../platform/auth/scopes';
import { affectedRows, queryFirst, queryRows } from '../platform/db/query';

// The OAuth server's SQL. Clients are global (a public client registers before anyone signs in) and
// are read on the bare connection; codes, refresh tokens and grants belong to a workspace and are
// read in a unit of work as their user, found first through the definer door `weft_oauth_secret`.

/** A statement outside any transaction (`DataSource` or its manager). */
type Connection = Pick<EntityManager, 'query'>;

export interface ClientRow {
  id: string;
  client_name: string | null;
  redirect_uris: string[];
}

export interface GrantRow {
  id: string;
  workspace_id: string;
  user_id: string;
  client_id: string;
  client_name: string | null;
  scopes: ScopeName[];
  resource: string;
  revoked_at: Date | null;
}

export interface CodeRow {
  grant_id: string;
  redirect_uri: string;
  code_challenge: string;
  expires_at: Date;
  used_at: Date | null;
}

export interface RefreshTokenRow {
  grant_id: string;
  expires_at: Date;
  used_at: Date | null;
}

export async function findClient(db: Connection, clientId: string): Promise<ClientRow | undefined> {
  const rows: ClientRow[] = await db.query('SELECT id, client_name, redirect_uris FROM oauth_clients WHERE id = $1', [
    clientId,
  ]);
  return rows[0];
}

/** Clients nobody signed in with within `days` of registering go. */
export const deleteUnusedClients = (m: EntityManager, days: number) =>
  affectedRows(
    m,
    `DELETE FROM oauth_clients WHERE last_used_at IS NULL AND created_at < now() - make_interval(days => $1)`,
    [days],
  );

/** One source registers one at a time (until the transaction ends), so its counts hold. */
export const lockRegistrationSource = (m: EntityManager, source: string) =>
  queryRows(m, 'SELECT pg_advisory_xact_lock(hashtext($1))', [`oauth-register:${source}`]);

/** A source's clients nobody has signed in with yet, and those it registered within the hour. */
export const registrationCounts = async (m: EntityManager, source: string) =>
  (await queryFirst<{ live: number; hour: number }>(
    m,
    `SELECT count(*) FILTER (WHERE last_used_at IS NULL)::int AS live,
            count(*) FILTER (WHERE created_at > now() - interval '1 hour')::int AS hour
     FROM oauth_clients WHERE registered_from = $1`,
    [source],
  ))!;

export const insertClient = async (
  m: EntityManager,
  client: { id: string; name: string | null; redirectUris: string[]; source: string },
) =>
  (await queryFirst<ClientRow & { client_id_issued_at: number }>(
    m,
    `INSERT INTO oauth_clients (id, client_name, redirect_uris, registered_from) VALUES ($1, $2, $3, $4)
     RETURNING id, client_name, redirect_uris, extract(epoch FROM created_at)::int AS client_id_issued_at`,
    [client.id, client.name, client.redirectUris, client.source],
  ))!;

/** A client signed in with: it is no longer swept as unused. */
export const touchClient = (m: EntityManager, clientId: string) =>
  affectedRows(m, 'UPDATE oauth_clients SET last_used_at = now() WHERE id = $1', [clientId]);

/** The kind, workspace and user of a code's or refresh token's hash (definer: before any scope is known). */
export const findSecretOwners = (
  db: Connection,
  hash: string,
): Promise<{ kind: string; workspace_id: string; user_id: string }[]> =>
  db.query('SELECT * FROM weft_oauth_secret($1)', [hash]);

export const insertGrant = async (
  m: EntityManager,
  grant: Pick<GrantRow, 'workspace_id' | 'user_id' | 'client_id' | 'client_name' | 'scopes' | 'resource'>,
): Promise<string> =>
  (await queryFirst<{ id: string }>(
    m,
    `INSERT INTO oauth_grants (workspace_id, user_id, client_id, client_name, scopes, resource)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
    [grant.workspace_id, grant.user_id, grant.client_id, grant.client_name, grant.scopes, grant.resource],
  ))!.id;

export const lockGrant = async (m: EntityManager, id: string): Promise<GrantRow> =>
  (await queryFirst<GrantRow>(m, 'SELECT * FROM oauth_grants WHERE id = $1 FOR UPDATE', [id]))!;

/** A grant ends with its access tokens (their credential rows); its refresh tokens end with it. */
export async function revokeGrantRows(m: EntityManager, grantId: string, reason: string): Promise<void> {
  await affectedRows(
    m,
    `UPDATE oauth_grants SET revoked_at = now(), revoked_reason = $2 WHERE id = $1 AND revoked_at IS NULL`,
    [grantId, reason],
  );
  await affectedRows(m, 'UPDATE api_keys SET revoked_at = now() WHERE oauth_grant_id = $1 AND revoked_at IS NULL', [
    grantId,
  ]);
}

/** The caller's grants in a workspace, newest first. */
export const listGrants = (m: EntityManager, workspaceId: string, userId: string) =>
  queryRows<GrantRow & { created_at: Date; revoked_reason: string | null }>(
    m,
    `SELECT * FROM oauth_grants WHERE workspace_id = $1 AND user_id = $2 ORDER BY created_at DESC, id DESC`,
    [workspaceId, userId],
  );

export const findOwnGrant = (m: EntityManager, grantId: string, userId: string) =>
  queryFirst<{ id: string }>(m, 'SELECT id FROM oauth_grants WHERE id = $1 AND user_id = $2', [grantId, userId]);

export const insertCode = (
  m: EntityManager,
  code: {
    hash: string;
    grantId: string;
    workspaceId: string;
    redirectUri: string;
    challenge: string;
    seconds: number;
  },
) =>
  affectedRows(
    m,
    `INSERT INTO oauth_codes (code_hash, grant_id, workspace_id, redirect_uri, code_challenge, expires_at)
     VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))`,
    [code.hash, code.grantId, code.workspaceId, code.redirectUri, code.challenge, code.seconds],
  );

export const lockCode = async (m: EntityManager, hash: string): Promise<CodeRow> =>
  (await queryFirst<CodeRow>(m, 'SELECT * FROM oauth_codes WHERE code_hash = $1 FOR UPDATE', [hash]))!;

export const markCodeUsed = (m: EntityManager, hash: string) =>
  affectedRows(m, 'UPDATE oauth_codes SET used_at = now() WHERE code_hash = $1', [hash]);

export const insertRefreshToken = (
  m: EntityManager,
  token: { hash: string; grantId: string; workspaceId: string; expiresAt: Date },
) =>
  affectedRows(
    m,
    `INSERT INTO oauth_refresh_tokens (token_hash, grant_id, workspace_id, expires_at) VALUES ($1, $2, $3, $4)`,
    [token.hash, token.grantId, token.workspaceId, token.expiresAt],
  );

export const lockRefreshToken = async (m: EntityManager, hash: string): Promise<RefreshTokenRow> =>
  (await queryFirst<RefreshTokenRow>(m, 'SELECT * FROM oauth_refresh_tokens WHERE token_hash = $1 FOR UPDATE', [
    hash,
  ]))!;

export const findRefreshTokenGrant = async (m: EntityManager, hash: string): Promise<string> =>
  (await queryFirst<{ grant_id: string }>(m, 'SELECT grant_id FROM oauth_refresh_tokens WHERE token_hash = $1', [
    hash,
  ]))!.grant_id;

export const markRefreshTokenUsed = (m: EntityManager, hash: string) =>
  affectedRows(m, 'UPDATE oauth_refresh_tokens SET used_at = now() WHERE token_hash = $1', [hash]);

/** An access token's credential row names its grant. */
export const linkTokenToGrant = (m: EntityManager, tokenId: string, grantId: string) =>
  affectedRows(m, 'UPDATE api_keys SET oauth_grant_id = $1 WHERE id = $2', [grantId, tokenId]);

/** One access token ends itself (RFC 7009), when its row and hash match an OAuth-issued token. */
export const revokeAccessToken = (m: EntityManager, tokenId: string, tokenHash: string) =>
  affectedRows(
    m,
    `UPDATE api_keys SET revoked_at = now()
     WHERE id = $1 AND oauth_grant_id IS NOT NULL AND revoked_at IS NULL AND key_hash = $2`,
    [tokenId, tokenHash],
  );

export const isMember = async (m: EntityManager, workspaceId: string, userId: string): Promise<boolean> =>
  (await queryRows(m, 'SELECT 1 FROM memberships WHERE workspace_id = $1 AND user_id = $2', [workspaceId, userId]))
    .length > 0;

/** The workspaces the consent page offers: the person's memberships, the default first. */
export const listMemberWorkspaces = (m: EntityManager, userId: string) =>
  queryRows<{ id: string; name: string; is_default: boolean }>(
    m,
    `SELECT w.id, w.name, ms.is_default FROM memberships ms JOIN workspaces w ON w.id = ms.workspace_id
     WHERE ms.user_id = $1 ORDER BY ms.is_default DESC, ms.created_at, w.id`,
    [userId],
  );
