import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { insertCredential } from '../api-keys/repository';
import type { Principal } from '../platform/auth/principal';
import type { JwtService } from '../platform/auth/tokens';
import { sha256Hex } from '../platform/auth/tokens';
import { assertWorkspaceVisible } from '../platform/auth/workspace-visibility';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { NotFoundError } from '../platform/errors';
import { LIMITS } from '../rules/limits';
import { checkRedirectUri, grantedScopes, OAuthError, redirectMatches } from './clients';
import type { ClientRow, GrantRow } from './repository';
import * as repo from './repository';

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

export type { ClientRow } from './repository';

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

/**
 * Weft as an OAuth 2.1 authorization server for `/mcp` and `/a2a` (a grant is for one of them, RFC
 * 8707): public clients registered dynamically, the authorization-code grant with PKCE (S256),
 * rotating refresh tokens, revocation. An access
 * token is an MCP-audience JWT whose credential row names its grant, so the authenticator treats
 * it as any MCP token and revoking the grant revokes it.
 */
export function createOAuthService(deps: { uow: UnitOfWork; dataSource: DataSource; jwt: JwtService }) {
  const { uow, dataSource, jwt } = deps;

  const findClient = (clientId: string): Promise<ClientRow | undefined> => repo.findClient(dataSource, clientId);

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
      await repo.deleteUnusedClients(m, LIMIT.unusedClientDays);
      // One source registers one at a time, so the counts below hold.
      await repo.lockRegistrationSource(m, source);
      const counts = await repo.registrationCounts(m, source);
      if (counts.hour >= LIMIT.registrationsPerSourcePerHour || counts.live >= LIMIT.clientsPerSource) {
        throw new OAuthError('too_many_registrations', 'Too many clients registered from this address', 429);
      }
      const id = `${CLIENT_MARKER}${randomUUID()}`;
      return repo.insertClient(m, { id, name, redirectUris: metadata.redirect_uris, source });
    });
  }

  /**
   * The checks of an authorization request. Before the redirect URI is known good an error is the
   * browser's (`redirectable: false`); after it, the client's, sent to its redirect URI.
   */
  async function checkRequest(request: AuthorizationRequest, resources: readonly string[]) {
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
    // RFC 8707: one of the protected resources (`/mcp`, `/a2a`); a request naming none is for the first.
    const resource = request.resource ?? resources[0]!;
    if (!resources.includes(resource)) {
      throw new OAuthError('invalid_target', `This server issues tokens for ${resources.join(' and ')} only`);
    }
    return { client, scopes: grantedScopes(request.scope), resource };
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
      // RFC 8707: the token's audience is the resource the grant was for, where alone it is accepted.
      resource: grant.resource,
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
      // A grant a person consented to (with their session) mints its access tokens.
      mintedByKind: 'oauth_grant',
      mintedById: grant.id,
    });
    await repo.linkTokenToGrant(m, tokenId, grant.id);
    const refreshToken = newSecret(REFRESH_MARKER);
    await repo.insertRefreshToken(m, {
      hash: sha256Hex(refreshToken),
      grantId: grant.id,
      workspaceId: grant.workspace_id,
      expiresAt: new Date(Date.now() + LIMIT.refreshTokenDays * DAY_MS),
    });
    await repo.touchClient(m, grant.client_id);
    return {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: LIMIT.accessTokenSeconds,
      refresh_token: refreshToken,
      scope: grant.scopes.join(' '),
    };
  }

  /** A grant ends with its access tokens and refresh tokens. */
  const revokeGrant = repo.revokeGrantRows;

  /** The workspace and user a code or refresh token belongs to, then a unit of work as that user there. */
  async function asOwnerOf<T>(
    secret: string,
    kind: 'code' | 'refresh',
    work: (m: EntityManager, hash: string) => Promise<T>,
  ): Promise<T> {
    const hash = sha256Hex(secret);
    const rows = await repo.findSecretOwners(dataSource, hash);
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

  const findGrant = repo.lockGrant;

  return {
    findClient,
    register,
    checkRequest,

    /** The consent page's approval: a grant for the workspace and a one-time code for the client. */
    approve: (principal: Principal, workspaceId: string, request: AuthorizationRequest, resources: readonly string[]) =>
      uow({ workspaceId, userId: principal.userId }, async (m) => {
        await assertWorkspaceVisible(m, principal, workspaceId);
        const { client, scopes, resource } = await checkRequest(request, resources);
        const grantId = await repo.insertGrant(m, {
          workspace_id: workspaceId,
          user_id: principal.userId,
          client_id: client.id,
          client_name: client.client_name,
          scopes,
          resource,
        });
        const code = newSecret(CODE_MARKER);
        await repo.insertCode(m, {
          hash: sha256Hex(code),
          grantId,
          workspaceId,
          redirectUri: request.redirect_uri,
          challenge: request.code_challenge!,
          seconds: LIMIT.codeSeconds,
        });
        return { grantId, code };
      }),

    /** RFC 6749 §4.1.3 with PKCE; a code used twice revokes its grant (§4.1.2). */
    exchangeCode: (input: {
      code: string;
      client_id?: string;
      redirect_uri?: string;
      code_verifier?: string;
      resource?: string;
    }) =>
      settled(
        asOwnerOf(input.code, 'code', async (m, hash): Promise<TokenAnswer | OAuthError> => {
          const code = await repo.lockCode(m, hash);
          const grant = await findGrant(m, code.grant_id);
          if (code.used_at) {
            await revokeGrant(m, grant.id, 'code_reused');
            return new OAuthError('invalid_grant', 'The code was already used; its grant is revoked');
          }
          await repo.markCodeUsed(m, hash);
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
          if (input.resource !== undefined && input.resource !== grant.resource) {
            return new OAuthError('invalid_target', `This grant is for ${grant.resource} only`);
          }
          return issueTokens(m, grant);
        }),
      ),

    /** Refresh tokens rotate; one presented again after its rotation revokes the grant (OAuth 2.1 §4.3.1). */
    refresh: (input: { refresh_token: string; client_id?: string; resource?: string }) =>
      settled(
        asOwnerOf(input.refresh_token, 'refresh', async (m, hash): Promise<TokenAnswer | OAuthError> => {
          const token = await repo.lockRefreshToken(m, hash);
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
          if (input.resource !== undefined && input.resource !== grant.resource) {
            return new OAuthError('invalid_target', `This grant is for ${grant.resource} only`);
          }
          // A refresh acts for the person later: only while they still belong to the workspace.
          if (!(await repo.isMember(m, grant.workspace_id, grant.user_id))) {
            await revokeGrant(m, grant.id, 'membership_ended');
            return new OAuthError('invalid_grant', 'The person no longer belongs to the workspace; grant revoked');
          }
          await repo.markRefreshTokenUsed(m, hash);
          return issueTokens(m, grant);
        }),
      ),

    /** RFC 7009: a refresh token ends its grant; an access token ends itself. Unknown tokens are no error. */
    async revokeToken(token: string) {
      if (token.startsWith(REFRESH_MARKER)) {
        await asOwnerOf(token, 'refresh', async (m, hash) => {
          await revokeGrant(m, await repo.findRefreshTokenGrant(m, hash), 'revoked_by_client');
        }).catch((error) => {
          if (!(error instanceof OAuthError)) throw error;
        });
        return;
      }
      const claims = await jwt.verify(token);
      if (claims?.audience !== 'mcp' || !claims.workspaceId) return;
      await uow({ workspaceId: claims.workspaceId, userId: claims.userId }, (m) =>
        repo.revokeAccessToken(m, claims.tokenId, sha256Hex(token)),
      );
    },

    /** The workspaces the consent page offers: the person's memberships, the default first. */
    workspacesOf: (principal: Principal) =>
      uow({ workspaceId: principal.workspaceId, userId: principal.userId }, (m) =>
        repo.listMemberWorkspaces(m, principal.userId),
      ),

    /** The caller's grants in a workspace, newest first (beside its MCP tokens). */
    listGrants: (principal: Principal, workspaceId: string) =>
      uow({ workspaceId, userId: principal.userId }, async (m) => {
        await assertWorkspaceVisible(m, principal, workspaceId);
        const rows = await repo.listGrants(m, workspaceId, principal.userId);
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
        const row = await repo.findOwnGrant(m, grantId, principal.userId);
        if (!row) throw new NotFoundError('Grant not found');
        await revokeGrant(m, grantId, 'revoked_by_user');
      }),
  };
}

export type OAuthService = ReturnType<typeof createOAuthService>;
