import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import type { Config } from '../config';

/** Opaque API keys start with this, which is how the authenticator tells them from JWTs. */
export const API_KEY_MARKER = 'weft_sk_';
/** An operator codec token (`weft operator token`), minted on the owner connection. */
export const OPERATOR_TOKEN_MARKER = 'weft_op_';

export const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex');

export interface IssuedSecret {
  token: string;
  prefix: string;
  hash: string;
}

/** A new secret after `marker`: 256 random bits; only the SHA-256 and a short prefix are ever stored. */
function issueSecret(marker: string): IssuedSecret {
  const token = `${marker}${randomBytes(32).toString('base64url')}`;
  return { token, prefix: token.slice(0, marker.length + 8), hash: sha256Hex(token) };
}

/** A new API key (`weft_sk_…`). */
export const issueApiKeySecret = (): IssuedSecret => issueSecret(API_KEY_MARKER);

/** A new operator codec token (`weft_op_…`). */
export const issueOperatorToken = (): IssuedSecret => issueSecret(OPERATOR_TOKEN_MARKER);

export type JwtAudience = 'user' | 'mcp';

export interface VerifiedJwt {
  audience: JwtAudience;
  userId: string;
  workspaceId?: string;
  /** The `jti`: an MCP token's row, or the id a user JWT is revoked by. */
  tokenId: string;
  expiresAt: Date;
  /**
   * An OAuth access token's resource (RFC 8707: its audience besides the MCP one, the URL of `/mcp`
   * it was issued for); undefined for every other token. Such a token is accepted at that path only.
   */
  resource?: string;
}

export interface JwtService {
  signUser(userId: string, workspaceId: string): Promise<string>;
  /**
   * `clientId`: the OAuth client an access token was issued to (RFC 9068's `client_id` claim);
   * `resource`: the resource it was issued for (RFC 8707), which joins its audience.
   */
  signMcp(input: {
    userId: string;
    workspaceId: string;
    tokenId: string;
    expiresAt: Date;
    clientId?: string;
    resource?: string;
  }): Promise<string>;
  /** Returns undefined for any token that is not a valid, unexpired Weft JWT. */
  verify(token: string): Promise<VerifiedJwt | undefined>;
}

export function createJwtService(
  config: Pick<Config, 'JWT_SECRET' | 'JWT_ISSUER' | 'JWT_AUDIENCE' | 'MCP_JWT_AUDIENCE' | 'USER_JWT_TTL_SECONDS'>,
): JwtService {
  const key = new TextEncoder().encode(config.JWT_SECRET);
  const base = (claims: Record<string, unknown>, subject: string, audience: string | string[]) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(subject)
      .setIssuer(config.JWT_ISSUER)
      .setAudience(audience)
      .setIssuedAt();

  return {
    // The jti is what `weft tokens revoke` lists in revoked_tokens.
    signUser: (userId, workspaceId) =>
      base({ wid: workspaceId }, userId, config.JWT_AUDIENCE)
        .setJti(randomUUID())
        .setExpirationTime(`${config.USER_JWT_TTL_SECONDS}s`)
        .sign(key),
    signMcp: ({ userId, workspaceId, tokenId, expiresAt, clientId, resource }) =>
      base(
        { wid: workspaceId, ...(clientId ? { client_id: clientId } : {}) },
        userId,
        resource ? [config.MCP_JWT_AUDIENCE, resource] : config.MCP_JWT_AUDIENCE,
      )
        .setJti(tokenId)
        .setExpirationTime(expiresAt)
        .sign(key),
    async verify(token) {
      try {
        const { payload } = await jwtVerify(token, key, {
          algorithms: ['HS256'],
          issuer: config.JWT_ISSUER,
          audience: [config.JWT_AUDIENCE, config.MCP_JWT_AUDIENCE],
          requiredClaims: ['sub', 'exp', 'jti'],
        });
        const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
        const audience: JwtAudience = audiences.includes(config.MCP_JWT_AUDIENCE) ? 'mcp' : 'user';
        const resource = audiences.find((aud) => aud !== config.MCP_JWT_AUDIENCE && aud !== config.JWT_AUDIENCE);
        // An audience that is no URL is no resource this server issued for: refused.
        if (resource !== undefined && (audience !== 'mcp' || !URL.canParse(resource))) return undefined;
        const workspaceId = typeof payload.wid === 'string' ? payload.wid : undefined;
        const { sub, jti, exp } = payload;
        // A token without a uuid jti (one issued before revocation existed) cannot be revoked: refused.
        if (!isUuid(sub) || !isUuid(jti) || typeof exp !== 'number') return undefined;
        if (workspaceId !== undefined && !isUuid(workspaceId)) return undefined;
        return {
          audience,
          userId: sub,
          workspaceId,
          tokenId: jti,
          expiresAt: new Date(exp * 1000),
          ...(resource !== undefined ? { resource } : {}),
        };
      } catch (error) {
        if (error instanceof joseErrors.JOSEError) return undefined;
        throw error;
      }
    },
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);
