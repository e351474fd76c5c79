import type { Payload } from '@temporalio/common';
import type { Context } from 'koa';
import type { DataSource } from 'typeorm';
import { LIMITS } from '../../../rules/limits';
import type { RateLimiter } from '../../api/rate-limit';
import { defineRoute } from '../../api/route';
import type { Authenticator } from '../../auth/authenticator';
import { OPERATOR_SCOPE } from '../../auth/scopes';
import { OPERATOR_TOKEN_MARKER, sha256Hex } from '../../auth/tokens';
import type { Config } from '../../config';
import type { DomainError } from '../../errors';
import { ForbiddenError, NotFoundError, UnauthenticatedError } from '../../errors';
import type { EncryptionCodec } from '../codec';
import { PayloadDecryptionError } from '../codec';
import { CodecPayloads, CodecPayloadsRequest } from './schemas';

const fromJson = (body: CodecPayloads): Payload[] =>
  body.payloads.map((payload) => ({
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
    ),
    data: Buffer.from(payload.data ?? '', 'base64'),
  }));

const toJson = (payloads: Payload[]): CodecPayloads => ({
  payloads: payloads.map((payload) => ({
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
    ),
    data: Buffer.from(payload.data ?? []).toString('base64'),
  })),
});

/**
 * The Temporal CLI retries every answer of a codec endpoint but a 200 until its 10 s deadline, then prints only
 * "context deadline exceeded" (the Go SDK's codec error is no gRPC status, so its retry interceptor treats it as
 * transient). So a codec client — it sends `X-Namespace`, even empty; scripts and the typed client do not — whose
 * credential is refused gets a 200 in which each payload is replaced by the refusal, and the CLI prints that at
 * once. The status it would have had is in `Weft-Codec-Refused`. Nothing of the payloads is in the answer.
 */
export const CODEC_REFUSED_HEADER = 'Weft-Codec-Refused';
const isCodecClient = (ctx: Context) => 'x-namespace' in ctx.headers;
const isCredentialRefusal = (error: unknown): error is DomainError =>
  error instanceof UnauthenticatedError || error instanceof ForbiddenError;
const STATUS_OF_REFUSAL = { unauthenticated: 401, forbidden: 403 } as Record<string, number>;

function refusalPayload(error: DomainError): Payload {
  const refusal = { weft_codec_refused: { status: STATUS_OF_REFUSAL[error.code], detail: error.detail } };
  return { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(refusal)) };
}

/** Who may open which payloads: an operator every scope, a tenant credential its own workspace only. */
type Opener = { operator: true } | { operator: false; workspaceId: string };

const DEV_LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

export interface CodecRouteDeps {
  codec: EncryptionCodec;
  authenticator: Authenticator;
  dataSource: DataSource;
  config: Pick<Config, 'NODE_ENV' | 'TEMPORAL_UI_DEV_CODEC'>;
  /** The API's limiter: a tenant's codec calls count with its other requests. */
  rateLimiter?: RateLimiter;
}

/**
 * Temporal's codec server protocol (the Temporal UI's "codec endpoint", the CLI's `--codec-endpoint`).
 * Payloads are sealed per workspace (`codec.ts`): a tenant's user JWT or API key (with `ontology:read`)
 * opens its own workspace's payloads, and gets every other payload back unchanged, never an error that
 * tells what it is. An operator token (`weft operator token`, minted on the owner connection) opens
 * every workspace's and the system's. The routes authenticate themselves: an operator token is
 * accepted here and nowhere else. Browser calls from the UI are allowed by `codecCors`.
 */
export function temporalCodecRoutes(deps: CodecRouteDeps) {
  const { codec } = deps;

  async function operatorToken(token: string): Promise<boolean> {
    // operator_tokens has no workspace and no RLS; the app role may only read it (migration 1763780010000).
    const rows: unknown[] = await deps.dataSource.query(
      `SELECT 1 FROM operator_tokens
       WHERE token_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
      [sha256Hex(token)],
    );
    return rows.length > 0;
  }

  /** A credential's check, under the same allowance of refused credentials as every other route. */
  const guarded = <T>(ctx: Context, attempt: () => Promise<T>) =>
    deps.rateLimiter ? deps.rateLimiter.guardAuthentication(ctx.ip, attempt) : attempt();

  async function opener(ctx: Context): Promise<Opener> {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'))?.[1];
    if (token?.startsWith(OPERATOR_TOKEN_MARKER)) {
      return guarded(ctx, async () => {
        if (!(await operatorToken(token))) throw new UnauthenticatedError('Invalid or revoked credential');
        return { operator: true };
      });
    }
    // The development UI's own path: `npm start` points its Temporal UI here, on loopback only.
    if (ctx.path.startsWith('/v1/temporal-codec/dev/')) {
      if (deps.config.NODE_ENV === 'production' || !deps.config.TEMPORAL_UI_DEV_CODEC) {
        throw new NotFoundError('Not found');
      }
      if (!DEV_LOOPBACK.has(ctx.request.socket.remoteAddress ?? '')) throw new ForbiddenError('Loopback only');
      return { operator: true };
    }
    const principal = await guarded(ctx, () => deps.authenticator.authenticate(ctx, undefined));
    await deps.rateLimiter?.take(principal.credential, principal.userId);
    if (principal.credential.kind === 'mcp_token') throw new ForbiddenError('MCP tokens cannot decode payloads');
    if (!principal.scopes.has('ontology:read')) throw new ForbiddenError('Missing scope ontology:read');
    return { operator: false, workspaceId: principal.workspaceId };
  }

  function decode(payloads: Payload[], who: Opener): Payload[] {
    return payloads.map((payload) => {
      const scope = codec.scopeOf(payload);
      if (scope === undefined || (!who.operator && scope !== who.workspaceId)) return payload;
      try {
        return codec.open(payload);
      } catch (error) {
        // Relabelled, forged or sealed under a retired key nobody configured: it stays as it came.
        if (error instanceof PayloadDecryptionError) return payload;
        throw error;
      }
    });
  }

  const decodeDescription =
    'Temporal’s codec server protocol: sealed payloads in, plaintext payloads out, for the Temporal UI and CLI ' +
    '(`--codec-endpoint`). A user JWT or API key with `ontology:read` opens its own workspace’s payloads; an ' +
    'operator token (`weft operator token`) opens every workspace’s. Any other payload comes back unchanged. ' +
    `\`{}\` is no payloads. At most ${LIMITS.temporalCodecPayloads} payloads per request.`;
  const encodeDescription =
    'The inverse of decode, for an operator (a signal sent from the Temporal UI): each payload is sealed with ' +
    'the key of the workspace its JSON names (`workspaceId`), else the system key. Operator token only.';

  const decodeRoute = (path: string, operationId: string, description: string) =>
    defineRoute({
      method: 'post',
      path,
      operationId,
      summary: 'Decrypt Temporal payloads (codec server protocol)',
      description,
      tags: ['temporal'],
      public: true,
      credentials: ['api_key', 'user_jwt', 'operator_token'],
      example: { payloads: [{ metadata: { encoding: 'YmluYXJ5L2VuY3J5cHRlZA==' }, data: 'AAAA' }] },
      body: CodecPayloadsRequest,
      response: CodecPayloads,
      responseHeaders: {
        [CODEC_REFUSED_HEADER]: {
          description:
            'Set when a codec client (`X-Namespace` sent) was refused: 401 or 403, the status a script gets. ' +
            'Each payload of the answer is then a `json/plain` `{"weft_codec_refused":{status,detail}}`.',
          schema: { type: 'string', enum: ['401', '403'] },
        },
      },
      errors: {
        401: 'No or an invalid credential (a codec client, `X-Namespace` sent, gets a 200 naming the refusal)',
        403: 'An MCP token, or a key without ontology:read (a codec client gets a 200 naming the refusal)',
        429: 'Too many requests of a tenant credential; retry after `Retry-After` seconds',
      },
      handler: async ({ body, ctx }) => {
        const payloads = fromJson(body);
        let who: Opener;
        try {
          who = await opener(ctx);
        } catch (error) {
          if (!isCredentialRefusal(error) || !isCodecClient(ctx)) throw error;
          ctx.set(CODEC_REFUSED_HEADER, String(STATUS_OF_REFUSAL[error.code]));
          return toJson(payloads.map(() => refusalPayload(error)));
        }
        return toJson(decode(payloads, who));
      },
    });

  const encodeRoute = (path: string, operationId: string, description: string) =>
    defineRoute({
      method: 'post',
      path,
      operationId,
      summary: 'Encrypt Temporal payloads (codec server protocol), say for a signal sent from the UI',
      description,
      tags: ['temporal'],
      public: true,
      credentials: ['operator_token'],
      example: { payloads: [{ metadata: { encoding: 'anNvbi9wbGFpbg==' }, data: 'e30=' }] },
      body: CodecPayloadsRequest,
      response: CodecPayloads,
      errors: { 401: 'No or an invalid credential', 403: `Only an operator token (${OPERATOR_SCOPE}) encodes` },
      handler: async ({ body, ctx }) => {
        const who = await opener(ctx);
        if (!who.operator) throw new ForbiddenError(`Only an operator token (${OPERATOR_SCOPE}) encodes`);
        return toJson(fromJson(body).map((payload) => codec.seal(payload, codec.scopeFor(payload))));
      },
    });

  const routes = [
    decodeRoute('/v1/temporal-codec/decode', 'decodeTemporalPayloads', decodeDescription),
    encodeRoute('/v1/temporal-codec/encode', 'encodeTemporalPayloads', encodeDescription),
  ];
  if (deps.config.NODE_ENV === 'production' || !deps.config.TEMPORAL_UI_DEV_CODEC) return routes;
  const dev = ' Development only (TEMPORAL_UI_DEV_CODEC): the UI of `npm start`, from loopback, without a credential.';
  return [
    ...routes,
    decodeRoute('/v1/temporal-codec/dev/decode', 'decodeTemporalPayloadsDev', decodeDescription + dev),
    encodeRoute('/v1/temporal-codec/dev/encode', 'encodeTemporalPayloadsDev', encodeDescription + dev),
  ];
}
