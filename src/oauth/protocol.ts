import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import { MCP_TOKEN_SCOPES } from '../platform/auth/scopes';
import type { Config } from '../platform/config';
import { UnauthenticatedError } from '../platform/errors';
import { OAuthError } from './clients';
import type { AuthorizationRequest, OAuthService } from './service';
import { redirectWith } from './service';

/** A protected resource: the MCP endpoint (its path is `src/mcp/routes.ts`'s MCP_PATH). */
export const MCP_RESOURCE_PATH = '/mcp';
/** A protected resource: the A2A JSON-RPC endpoint (`src/a2a/card.ts`'s A2A_PATH). */
export const A2A_RESOURCE_PATH = '/a2a';

/**
 * The resources OAuth access tokens are issued for, each its own audience (RFC 8707): a token is a
 * credential at its resource only. The first is the default, for a request that names none.
 */
const RESOURCES: Record<string, { name: string }> = {
  [MCP_RESOURCE_PATH]: { name: 'Weft MCP server' },
  [A2A_RESOURCE_PATH]: { name: 'Weft A2A agent' },
};
const RESOURCE_PATHS = Object.keys(RESOURCES);

/** The resources' URLs at `origin`, the default (`/mcp`) first. */
export const resourcesAt = (origin: string): string[] => RESOURCE_PATHS.map((path) => `${origin}${path}`);
export const OAUTH_PATHS = {
  resourceMetadata: '/.well-known/oauth-protected-resource',
  serverMetadata: '/.well-known/oauth-authorization-server',
  register: '/oauth/register',
  authorize: '/oauth/authorize',
  token: '/oauth/token',
  revoke: '/oauth/revoke',
  consentPage: '/console/oauth',
} as const;

/**
 * The origin OAuth metadata, challenges and tokens name: PUBLIC_URL, which production requires
 * (config.ts), so a forged `Host` never names the issuer (review NL-3). Outside production, unset,
 * the request's own origin.
 */
export const originOf = (ctx: Context, config: Pick<Config, 'PUBLIC_URL'>) =>
  (config.PUBLIC_URL || `${ctx.protocol}://${ctx.host}`).replace(/\/+$/, '');

const FORM_LIMIT_BYTES = 64 * 1024;

/** A form body (`application/x-www-form-urlencoded`), which the API's JSON parser leaves unread. */
async function formOf(ctx: Context): Promise<Record<string, string>> {
  if (!ctx.is('application/x-www-form-urlencoded')) {
    throw new OAuthError('invalid_request', 'The body must be application/x-www-form-urlencoded');
  }
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > FORM_LIMIT_BYTES) throw new OAuthError('invalid_request', 'The body is too large', 413);
    chunks.push(chunk);
  }
  return Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
}

const RegistrationBody = z.object({
  redirect_uris: z.array(z.string().max(2000)).min(1),
  client_name: z.string().optional(),
  token_endpoint_auth_method: z.string().optional(),
  grant_types: z.array(z.string()).optional(),
  response_types: z.array(z.string()).optional(),
});

const paramsOf = (source: Record<string, unknown>): AuthorizationRequest => {
  const text = (key: string) => (typeof source[key] === 'string' ? (source[key] as string) : undefined);
  return {
    client_id: text('client_id') ?? '',
    redirect_uri: text('redirect_uri') ?? '',
    response_type: text('response_type'),
    code_challenge: text('code_challenge'),
    code_challenge_method: text('code_challenge_method'),
    scope: text('scope'),
    state: text('state'),
    resource: text('resource'),
  };
};

function answerError(ctx: Context, error: OAuthError) {
  ctx.status = error.status;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { error: error.error, error_description: error.description };
}

/**
 * The OAuth endpoints for `/mcp` and `/a2a` (RFC 9728 resource metadata, RFC 8414 server metadata, RFC 7591
 * registration, authorization, token and revocation), ahead of the router: they speak OAuth's
 * bodies (forms in, `{error, error_description}` out), not the API's. The consent step is the
 * console's page and `POST /v1/oauth/consent` (routes.ts). Also adds RFC 9728's `resource_metadata`
 * to the challenge of a 401 from `/mcp` or `/a2a`, which is how a client finds all this.
 */
export function oauthMiddleware(oauth: OAuthService, config: Pick<Config, 'PUBLIC_URL'>): Middleware {
  return async (ctx, next) => {
    // Every other request (the API's hot paths) passes at the cost of a few string comparisons.
    const isResource = ctx.path in RESOURCES;
    if (!isResource && !ctx.path.startsWith('/oauth/') && !ctx.path.startsWith('/.well-known/oauth-')) return next();
    const origin = originOf(ctx, config);
    const resources = resourcesAt(origin);
    try {
      if (isResource) {
        return await challengeWithMetadata(ctx, next, `${origin}${OAUTH_PATHS.resourceMetadata}${ctx.path}`);
      }
      // Browser-based clients (the Inspector's web UI) call these from their own origin. No cookie is
      // involved anywhere (the codes and tokens travel in bodies), so any origin may.
      ctx.set('Access-Control-Allow-Origin', '*');
      if (ctx.method === 'OPTIONS') {
        ctx.set('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
        ctx.set('Access-Control-Allow-Headers', 'authorization, content-type, mcp-protocol-version');
        ctx.set('Access-Control-Max-Age', '600');
        ctx.status = 204;
        return;
      }
      const path = ctx.path.replace(/\/+$/, '');
      // RFC 9728 §3.1: a resource's metadata at the well-known path plus the resource's path; the bare
      // path is the default resource's (/mcp), as before /a2a was one.
      const described = path === OAUTH_PATHS.resourceMetadata ? MCP_RESOURCE_PATH : resourcePathOf(path);
      if (ctx.method === 'GET' && described !== undefined) {
        ctx.body = {
          resource: `${origin}${described}`,
          authorization_servers: [origin],
          scopes_supported: MCP_TOKEN_SCOPES,
          bearer_methods_supported: ['header'],
          resource_name: RESOURCES[described]!.name,
        };
        return;
      }
      if (ctx.method === 'GET' && path === OAUTH_PATHS.serverMetadata) {
        ctx.body = {
          issuer: origin,
          authorization_endpoint: `${origin}${OAUTH_PATHS.authorize}`,
          token_endpoint: `${origin}${OAUTH_PATHS.token}`,
          registration_endpoint: `${origin}${OAUTH_PATHS.register}`,
          revocation_endpoint: `${origin}${OAUTH_PATHS.revoke}`,
          response_types_supported: ['code'],
          grant_types_supported: ['authorization_code', 'refresh_token'],
          code_challenge_methods_supported: ['S256'],
          token_endpoint_auth_methods_supported: ['none'],
          revocation_endpoint_auth_methods_supported: ['none'],
          scopes_supported: MCP_TOKEN_SCOPES,
          authorization_response_iss_parameter_supported: true,
          // RFC 9728 §4: the resources its tokens are for; a request names one with `resource` (RFC 8707).
          protected_resources: resources,
        };
        return;
      }
      if (ctx.method === 'POST' && path === OAUTH_PATHS.register) return await register(ctx);
      if (ctx.method === 'GET' && path === OAUTH_PATHS.authorize) return await authorize(ctx, resources);
      if (ctx.method === 'POST' && path === OAUTH_PATHS.token) return await token(ctx);
      if (ctx.method === 'POST' && path === OAUTH_PATHS.revoke) {
        const form = await formOf(ctx);
        if (!form.token) throw new OAuthError('invalid_request', 'token is required');
        await oauth.revokeToken(form.token);
        ctx.status = 200;
        ctx.body = {};
        return;
      }
      return await next();
    } catch (error) {
      if (error instanceof OAuthError) return answerError(ctx, error);
      throw error;
    }
  };

  /** The resource path a metadata path names (`/.well-known/oauth-protected-resource/a2a` → `/a2a`). */
  function resourcePathOf(path: string): string | undefined {
    if (!path.startsWith(`${OAUTH_PATHS.resourceMetadata}/`)) return undefined;
    const named = path.slice(OAUTH_PATHS.resourceMetadata.length);
    return named in RESOURCES ? named : undefined;
  }

  async function challengeWithMetadata(ctx: Context, next: () => Promise<unknown>, metadataUrl: string) {
    try {
      await next();
    } catch (error) {
      if (!(error instanceof UnauthenticatedError)) throw error;
      // RFC 9728 §5.1: the challenge points at the resource metadata (the error body stays the API's).
      ctx.status = 401;
      ctx.set('WWW-Authenticate', `Bearer realm="weft", resource_metadata="${metadataUrl}"`);
      ctx.body = { detail: error.detail };
    }
  }

  async function register(ctx: Context) {
    const parsed = RegistrationBody.safeParse(ctx.request.body);
    if (!parsed.success)
      throw new OAuthError('invalid_client_metadata', 'redirect_uris (an array of URIs) is required');
    const body = parsed.data;
    if (body.grant_types?.some((grant) => grant !== 'authorization_code' && grant !== 'refresh_token')) {
      throw new OAuthError('invalid_client_metadata', 'Only the authorization_code and refresh_token grants');
    }
    const client = await oauth.register(ctx.ip, body);
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    // A public client (PKCE, no secret), whatever authentication method it asked for (RFC 7591 §3.2.1).
    ctx.body = {
      client_id: client.id,
      client_id_issued_at: client.client_id_issued_at,
      client_name: client.client_name ?? undefined,
      redirect_uris: client.redirect_uris,
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    };
  }

  /** Checks what can be checked without a person, then hands the browser to the console's consent page. */
  async function authorize(ctx: Context, resources: readonly string[]) {
    const request = paramsOf(ctx.query as Record<string, unknown>);
    try {
      await oauth.checkRequest(request, resources);
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      if ((error as { redirectable?: boolean }).redirectable === false) throw error;
      ctx.redirect(
        redirectWith(request.redirect_uri, {
          error: error.error,
          error_description: error.description,
          state: request.state,
          iss: originOf(ctx, config),
        }),
      );
      return;
    }
    ctx.redirect(`${OAUTH_PATHS.consentPage}?${ctx.querystring}`);
  }

  async function token(ctx: Context) {
    const form = await formOf(ctx);
    ctx.set('Cache-Control', 'no-store');
    if (form.grant_type === 'authorization_code') {
      if (!form.code) throw new OAuthError('invalid_request', 'code is required');
      ctx.body = await oauth.exchangeCode({
        code: form.code,
        client_id: form.client_id,
        redirect_uri: form.redirect_uri,
        code_verifier: form.code_verifier,
        resource: form.resource,
      });
      return;
    }
    if (form.grant_type === 'refresh_token') {
      if (!form.refresh_token) throw new OAuthError('invalid_request', 'refresh_token is required');
      ctx.body = await oauth.refresh({
        refresh_token: form.refresh_token,
        client_id: form.client_id,
        resource: form.resource,
      });
      return;
    }
    throw new OAuthError('unsupported_grant_type', 'authorization_code or refresh_token');
  }
}
