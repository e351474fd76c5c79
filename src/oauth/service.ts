import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { insertCredential } from '../api-keys/repository';
import type { Principal } from '../platform/auth/principal';
import type { ScopeName } from '../platform/auth/scopes';
import type { JwtService } from '../platform/auth/tokens';
import { sha256Hex } from '../platform/auth/tokens';
import { assertWorkspaceVisible } from '../platform/auth/workspace-visibility';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { NotFoundError } from '../platform/errors';
import { LIMITS } from '../rules/limits';
import { checkRedirectUri, grantedScopes, OAuthError, redirectMatches } from './clients';

const CODE_MARKER = 'weft_oc_';
const REFRESH_MARKER = 'weft_rt_';
const CLIENT_MARKER = 'weft_client_';
const DAY_MS = 24 * 3600 * 1000;
const { oauth: LIMIT } = LIMITS;

/** 256 random bits after a marker; only the SHA-256 is stored, as for API keys. */
const newSecret = (marker: string) => `${marker}${randomBytes(32).toString('base64url')}`;

/** RFC 7636 S256: BASE64URL(SHA256(verifier)) against the stored challenge, in constant time. */
function pkceMatches(verifier: string, challenge: string): boolean {
  const computed = Buffer.from(createHash('sha256').update(verifier).digest('base64url'));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}

export interface ClientRow {
  id: string;
  client_name: string | null;
  redirect_uris: string[];
}

export interface AuthorizationRequest {
  client_id: string;
  redirect_uri: string;
  response_type?: string;
  code_challenge?: string;
  code_challenge_method?: string;
  scope?: string;
  state?: string;
  resource?: string;
}

/** Where an authorization request's answer goes: the client's redirect URI with the query given. */
export function redirectWith(redirectUri: string, query: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [key, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(key, value);
  return url.toString();
}

export interface TokenAnswer {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

interface GrantRow {
  id: string;
  workspace_id: string;
  user_id: string;
  client_id: string;
  client_name: string | null;
  scopes: ScopeName[];
  resource: string;
  revoked_at: Date | null;
}

/**
 * Weft as an OAuth 2.1 authorization server for `/mcp`: public clients registered dynamically,
 * the authorization-code grant with PKCE (S256), rotating refresh tokens, revocation. An access
 * token is an MCP-audience JWT whose credential row names its grant, so the authenticator treats
 * it as any MCP token and revoking the grant revokes it.
 */
export function createOAuthService(deps: { uow: UnitOfWork; dataSource: DataSource; jwt: JwtService }) {
  const { uow, dataSource, jwt } = deps;

  async function findClient(clientId: string): Promise<ClientRow | undefined> {
    const rows: ClientRow[] = await dataSource.query(
      'SELECT id, client_name, redirect_uris FROM oauth_clients WHERE id = $1',
      [clientId],
    );
    return rows[0];
  }

  /**
   * RFC 7591. Per source address: so many registrations an hour, and so many clients nobody has signed in
   * with yet (those expire after LIMITS.oauth.unusedClientDays, swept here, at registration).
   */
  async function register(
    source: string,
    metadata: { redirect_uris: string[]; client_name?: string },
  ): Promise<ClientRow & { client_id_issued_at: number }> {
    if (metadata.redirect_uris.length === 0 || metadata.redirect_uris.length > LIMIT.redirectUris) {
      throw new OAuthError('invalid_redirect_uri', `Between 1 and ${LIMIT.redirectUris} redirect_uris`);
    }
    for (const uri of metadata.redirect_uris) {
      const problem = checkRedirectUri(uri);
      if (problem) throw new OAuthError('invalid_redirect_uri', problem);
    }
    const name = metadata.client_name?.slice(0, LIMIT.clientNameChars) ?? null;
    return dataSource.transaction(async (m) => {
      await m.query(
        `DELETE FROM oauth_clients WHERE last_used_at IS NULL AND created_at < now() - make_interval(days => $1)`,
        [LIMIT.unusedClientDays],
      );
      // One source registers one at a time, so the counts below hold.
      await m.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`oauth-register:${source}`]);
      const [counts] = await m.query(
        `SELECT count(*) FILTER (WHERE last_used_at IS NULL)::int AS live,
                count(*) FILTER (WHERE created_at > now() - interval '1 hour')::int AS hour
         FROM oauth_clients WHERE registered_from = $1`,
        [source],
      );
      if (counts.hour >= LIMIT.registrationsPerSourcePerHour || counts.live >= LIMIT.clientsPerSource) {
        throw new OAuthError('too_many_registrations', 'Too many clients registered from this address', 429);
      }
      const id = `${CLIENT_MARKER}${randomUUID()}`;
      const [row] = await m.query(
        `INSERT INTO oauth_clients (id, client_name, redirect_uris, registered_from) VALUES ($1, $2, $3, $4)
         RETURNING id, client_name, redirect_uris, extract(epoch FROM created_at)::int AS client_id_issued_at`,
        [id, name, metadata.redirect_uris, source],
      );
      return row;
    });
  }

  /**
   * The checks of an authorization request. Before the redirect URI is known good an error is the
   * browser's (`redirectable: false`); after it, the client's, sent to its redirect URI.
   */
  async function checkRequest(request: AuthorizationRequest, resource: string) {
    const client = request.client_id ? await findClient(request.client_id) : undefined;
    if (!client) throw Object.assign(new OAuthError('invalid_client', 'Unknown client_id'), { redirectable: false });
    if (!request.redirect_uri || !redirectMatches(client.redirect_uris, request.redirect_uri)) {
      const error = new OAuthError('invalid_request', 'redirect_uri is not one the client registered');
      throw Object.assign(error, { redirectable: false });
    }
    if (request.response_type !== undefined && request.response_type !== 'code') {
      throw new OAuthError('unsupported_response_type', 'Only response_type=code');
    }
    if (!request.code_challenge || request.code_challenge_method !== 'S256') {
      throw new OAuthError('invalid_request', 'PKCE is required: code_challenge with code_challenge_method=S256');
    }
    if (!/^[A-Za-z0-9_-]{43}$/.test(request.code_challenge)) {
      throw new OAuthError('invalid_request', 'code_challenge is not an S256 challenge');
    }
    if (request.resource !== undefined && request.resource !== resource) {
      throw new OAuthError('invalid_target', `This server issues tokens for ${resource} only`);
    }
    return { client, scopes: grantedScopes(request.scope) };
  }

  /** An access token (an MCP token of the grant) and a fresh refresh token. */
  async function issueTokens(m: EntityManager, grant: GrantRow): Promise<TokenAnswer> {
    const tokenId = randomUUID();
    const expiresAt = new Date(Date.now() + LIMIT.accessTokenSeconds * 1000);
    const accessToken = await jwt.signMcp({
      userId: grant.user_id,
      workspaceId: grant.workspace_id,
      tokenId,
      expiresAt,
      clientId: grant.client_id,
    });
    await insertCredential(m, {
      id: tokenId,
      workspaceId: grant.workspace_id,
      userId: grant.user_id,
      kind: 'mcp_token',
      name: `OAuth: ${grant.client_name ?? grant.client_id}`.slice(0, 100),
      scopes: grant.scopes,
      prefix: `mcp_${tokenId.slice(0, 8)}`,
      keyHash: sha256Hex(accessToken),
      expiresAt,
    });
    await m.query('UPDATE api_keys SET oauth_grant_id = $1 WHERE id = $2', [grant.id, tokenId]);
    const refreshToken = newSecret(REFRESH_MARKER);
    await m.query(
      `INSERT INTO oauth_refresh_tokens (token_hash, grant_id, workspace_id, expires_at) VALUES ($1, $2, $3, $4)`,
      [sha256Hex(refreshToken), grant.id, grant.workspace_id, new Date(Date.now() + LIMIT.refreshTokenDays * DAY_MS)],
    );
    await m.query('UPDATE oauth_clients SET last_used_at = now() WHERE id = $1', [grant.client_id]);
    return {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: LIMIT.accessTokenSeconds,
      refresh_token: refreshToken,
      scope: grant.scopes.join(' '),
    };
  }

  /** A grant ends with its access tokens and refresh tokens. */
  async function revokeGrant(m: EntityManager, grantId: string, reason: string) {
    await m.query(
      `UPDATE oauth_grants SET revoked_at = now(), revoked_reason = $2 WHERE id = $1 AND revoked_at IS NULL`,
      [grantId, reason],
    );
    await m.query('UPDATE api_keys SET revoked_at = now() WHERE oauth_grant_id = $1 AND revoked_at IS NULL', [grantId]);
  }

  /** The workspace and user a code or refresh token belongs to, then a unit of work as that user there. */
  async function asOwnerOf<T>(
    secret: string,
    kind: 'code' | 'refresh',
    work: (m: EntityManager, hash: string) => Promise<T>,
  ): Promise<T> {
    const hash = sha256Hex(secret);
    const rows: { kind: string; workspace_id: string; user_id: string }[] = await dataSource.query(
      'SELECT * FROM weft_oauth_secret($1)',
      [hash],
    );
    const owner = rows.find((row) => row.kind === kind);
    if (!owner) throw new OAuthError('invalid_grant', kind === 'code' ? 'Unknown code' : 'Unknown refresh token');
    return uow({ workspaceId: owner.workspace_id, userId: owner.user_id }, (m) => work(m, hash));
  }

  /**
   * A refusal of the token endpoint is returned, not thrown, from its unit of work, so what it wrote
   * commits: a code is spent by any attempt, and a reused code or refresh token revokes its grant.
   */
  const settled = async (work: Promise<TokenAnswer | OAuthError>): Promise<TokenAnswer> => {
    const result = await work;
    if (result instanceof OAuthError) throw result;
    return result;
  };

  const findGrant = async (m: EntityManager, id: string): Promise<GrantRow> =>
    (await m.query('SELECT * FROM oauth_grants WHERE id = $1 FOR UPDATE', [id]))[0];

  return {
    findClient,
    register,
    checkRequest,

    /** The consent page's approval: a grant for the workspace and a one-time code for the client. */
    approve: (principal: Principal, workspaceId: string, request: AuthorizationRequest, resource: string) =>
      uow({ workspaceId, userId: principal.userId }, async (m) => {
        await assertWorkspaceVisible(m, principal, workspaceId);
        const { client, scopes } = await checkRequest(request, resource);
        const [grant] = await m.query(
          `INSERT INTO oauth_grants (workspace_id, user_id, client_id, client_name, scopes, resource)
           VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
          [workspaceId, principal.userId, client.id, client.client_name, scopes, resource],
        );
        const code = newSecret(CODE_MARKER);
        await m.query(
          `INSERT INTO oauth_codes (code_hash, grant_id, workspace_id, redirect_uri, code_challenge, expires_at)
           VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))`,
          [sha256Hex(code), grant.id, workspaceId, request.redirect_uri, request.code_challenge, LIMIT.codeSeconds],
        );
        return { grantId: grant.id as string, code };
      }),

    /** RFC 6749 §4.1.3 with PKCE; a code used twice revokes its grant (§4.1.2). */
    exchangeCode: (
      input: {
        code: string;
        client_id?: string;
        redirect_uri?: string;
        code_verifier?: string;
        resource?: string;
      },
      resource: string,
    ) =>
      settled(
        asOwnerOf(input.code, 'code', async (m, hash): Promise<TokenAnswer | OAuthError> => {
          const [code] = await m.query('SELECT * FROM oauth_codes WHERE code_hash = $1 FOR UPDATE', [hash]);
          const grant = await findGrant(m, code.grant_id);
          if (code.used_at) {
            await revokeGrant(m, grant.id, 'code_reused');
            return new OAuthError('invalid_grant', 'The code was already used; its grant is revoked');
          }
          await m.query('UPDATE oauth_codes SET used_at = now() WHERE code_hash = $1', [hash]);
          if (grant.revoked_at || new Date(code.expires_at) <= new Date()) {
            return new OAuthError('invalid_grant', 'The code has expired');
          }
          if (input.client_id !== grant.client_id)
            return new OAuthError('invalid_grant', 'The code is another client’s');
          if (input.redirect_uri !== code.redirect_uri) {
            return new OAuthError('invalid_grant', 'redirect_uri differs from the authorization request’s');
          }
          if (!input.code_verifier) return new OAuthError('invalid_request', 'code_verifier is required (PKCE)');
          if (!pkceMatches(input.code_verifier, code.code_challenge)) {
            return new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
          }
          if (input.resource !== undefined && input.resource !== resource) {
            return new OAuthError('invalid_target', `This server issues tokens for ${resource} only`);
          }
          return issueTokens(m, grant);
        }),
      ),

    /** Refresh tokens rotate; one presented again after its rotation revokes the grant (OAuth 2.1 §4.3.1). */
    refresh: (input: { refresh_token: string; client_id?: string; resource?: string }, resource: string) =>
      settled(
        asOwnerOf(input.refresh_token, 'refresh', async (m, hash): Promise<TokenAnswer | OAuthError> => {
          const [token] = await m.query('SELECT * FROM oauth_refresh_tokens WHERE token_hash = $1 FOR UPDATE', [hash]);
          const grant = await findGrant(m, token.grant_id);
          if (input.client_id !== grant.client_id)
            return new OAuthError('invalid_grant', 'The token is another client’s');
          if (token.used_at) {
            await revokeGrant(m, grant.id, 'refresh_token_reused');
            return new OAuthError('invalid_grant', 'The refresh token was already used; its grant is revoked');
          }
          if (grant.revoked_at || new Date(token.expires_at) <= new Date()) {
            return new OAuthError('invalid_grant', 'The grant is revoked or the refresh token expired');
          }
          if (input.resource !== undefined && input.resource !== resource) {
            return new OAuthError('invalid_target', `This server issues tokens for ${resource} only`);
          }
          // A refresh acts for the person later: only while they still belong to the workspace.
          const member = await m.query('SELECT 1 FROM memberships WHERE workspace_id = $1 AND user_id = $2', [
            grant.workspace_id,
            grant.user_id,
          ]);
          if (member.length === 0) {
            await revokeGrant(m, grant.id, 'membership_ended');
            return new OAuthError('invalid_grant', 'The person no longer belongs to the workspace; grant revoked');
          }
          await m.query('UPDATE oauth_refresh_tokens SET used_at = now() WHERE token_hash = $1', [hash]);
          return issueTokens(m, grant);
        }),
      ),

    /** RFC 7009: a refresh token ends its grant; an access token ends itself. Unknown tokens are no error. */
    async revokeToken(token: string) {
      if (token.startsWith(REFRESH_MARKER)) {
        await asOwnerOf(token, 'refresh', async (m, hash) => {
          const [row] = await m.query('SELECT grant_id FROM oauth_refresh_tokens WHERE token_hash = $1', [hash]);
          await revokeGrant(m, row.grant_id, 'revoked_by_client');
        }).catch((error) => {
          if (!(error instanceof OAuthError)) throw error;
        });
        return;
      }
      const claims = await jwt.verify(token);
      if (claims?.audience !== 'mcp' || !claims.workspaceId) return;
      await uow({ workspaceId: claims.workspaceId, userId: claims.userId }, (m) =>
        m.query(
          `UPDATE api_keys SET revoked_at = now()
           WHERE id = $1 AND oauth_grant_id IS NOT NULL AND revoked_at IS NULL AND key_hash = $2`,
          [claims.tokenId, sha256Hex(token)],
        ),
      );
    },

    /** The workspaces the consent page offers: the person's memberships, the default first. */
    workspacesOf: (principal: Principal) =>
      uow({ workspaceId: principal.workspaceId, userId: principal.userId }, async (m) => {
        const rows: { id: string; name: string; is_default: boolean }[] = await m.query(
          `SELECT w.id, w.name, ms.is_default FROM memberships ms JOIN workspaces w ON w.id = ms.workspace_id
           WHERE ms.user_id = $1 ORDER BY ms.is_default DESC, ms.created_at, w.id`,
          [principal.userId],
        );
        return rows;
      }),

    /** The caller's grants in a workspace, newest first (beside its MCP tokens). */
    listGrants: (principal: Principal, workspaceId: string) =>
      uow({ workspaceId, userId: principal.userId }, async (m) => {
        await assertWorkspaceVisible(m, principal, workspaceId);
        const rows: (GrantRow & { created_at: Date; revoked_reason: string | null })[] = await m.query(
          `SELECT * FROM oauth_grants WHERE workspace_id = $1 AND user_id = $2 ORDER BY created_at DESC, id DESC`,
          [workspaceId, principal.userId],
        );
        return rows.map((row) => ({
          id: row.id,
          client_id: row.client_id,
          client_name: row.client_name,
          scopes: row.scopes,
          resource: row.resource,
          workspace_id: row.workspace_id,
          created_at: new Date(row.created_at).toISOString(),
          revoked_at: row.revoked_at ? new Date(row.revoked_at).toISOString() : null,
          revoked_reason: row.revoked_reason,
        }));
      }),

    /** Owner only and idempotent; another user's or workspace's grant is 404. */
    revokeGrant: (principal: Principal, workspaceId: string, grantId: string) =>
      uow({ workspaceId, userId: principal.userId }, async (m) => {
        await assertWorkspaceVisible(m, principal, workspaceId);
        const [row] = await m.query('SELECT id FROM oauth_grants WHERE id = $1 AND user_id = $2', [
          grantId,
          principal.userId,
        ]);
        if (!row) throw new NotFoundError('Grant not found');
        await revokeGrant(m, grantId, 'revoked_by_user');
      }),
  };
}

export type OAuthService = ReturnType<typeof createOAuthService>;
