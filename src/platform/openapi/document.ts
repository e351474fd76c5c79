import type { ResponseConfig, RouteConfig } from '@asteasolutions/zod-to-openapi';
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import type { CreditKind } from '../../rules/costs';
import { CREDIT_COSTS, CREDIT_KINDS } from '../../rules/costs';
import type { AnyRoute, CredentialKind, RouteOutcome } from '../api/route';
import { assertRoutesDocumented, JSON_BODY_LIMIT, JSON_MEDIA_TYPES } from '../api/route';
import { MCP_TOKEN_SCOPES } from '../auth/scopes';
import { Lsn, READ_AFTER_HEADER } from '../db/standby';
import type { TagDescriptions } from './tags';
import { OPENAPI_TAGS } from './tags';

export const API_VERSION = '0.21.8';

const ErrorBody = z
  .object({
    detail: z
      .union([z.string(), z.record(z.string(), z.unknown()), z.array(z.unknown())])
      .describe('What went wrong, for people: usually a sentence, sometimes an object with the facts.'),
  })
  .meta({ id: 'ErrorBody' });
const HTTPValidationError = z
  .object({
    detail: z.array(z.object({ loc: z.array(z.union([z.string(), z.number()])), msg: z.string(), type: z.string() })),
  })
  .meta({ id: 'HTTPValidationError' });
const InsufficientCredits = z
  .object({
    detail: z.object({
      error: z.literal('insufficient_credits'),
      required: z.number().int().describe('Credits the operation needs.'),
      available: z.number().int().describe('The tenant’s balance; 0 when the account is locked.'),
      kind: z.enum(CREDIT_KINDS as [CreditKind, ...CreditKind[]]),
      locked: z.literal(true).optional().describe('Present when the account is locked.'),
      estimate: z
        .record(z.string(), z.unknown())
        .optional()
        .describe(
          'A run refused at dispatch: its estimate (`credits`, `steps`, `complete`), as `?dry_run=true` shows it.',
        ),
    }),
  })
  .meta({ id: 'InsufficientCredits' });

// A read route that may be served by the standby (DATABASE_REPLICA_URL) honours the caller's last write.
const READ_AFTER = {
  [READ_AFTER_HEADER]: Lsn.optional().describe(
    'Read-your-writes with a standby (DATABASE_REPLICA_URL): the `Weft-Read-After` a write answered. The read ' +
      'is served by the standby only once it has replayed that far, else by the primary. Ignored without a standby.',
  ),
};

// Every operation (and `/docs`'s HTML) carries these two; documenting them once keeps clients honest.
const TRACE_HEADERS = {
  'X-Request-Id': { $ref: '#/components/headers/RequestId' },
  'X-Correlation-Id': { $ref: '#/components/headers/CorrelationId' },
};

// What a write answers when a standby serves the reads: the position to send back as `Weft-Read-After`.
const WRITE_POSITION = { [READ_AFTER_HEADER]: { $ref: '#/components/headers/WriteLsn' } };
const writes = (route: AnyRoute) => !route.public && route.method !== 'get';

const SECURITY_SCHEMES: Record<CredentialKind, { name: string; scheme: Record<string, string> }> = {
  api_key: {
    name: 'apiKey',
    scheme: {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'weft_sk_…',
      description: 'An API key, as a bearer token.',
    },
  },
  user_jwt: {
    name: 'userJwt',
    scheme: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A user JWT (all scopes).' },
  },
  mcp_token: {
    name: 'mcpToken',
    scheme: {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: 'An MCP-audience JWT (minted or named); never carries a `*:manage` scope.',
    },
  },
  operator_token: {
    name: 'operatorToken',
    scheme: {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'weft_op_…',
      description: 'An operator codec token (`weft operator token`): the Temporal codec routes only, every workspace.',
    },
  },
  webhook_signature: {
    name: 'webhookSignature',
    scheme: {
      type: 'apiKey',
      in: 'header',
      name: 'X-Service-Signature',
      description: '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">` keyed with the trigger’s secret.',
    },
  },
};

const json = (schema: z.ZodType, example?: unknown) => ({
  'application/json': example === undefined ? { schema } : { schema, example },
});

const credits = (n: number) => `${n} credit${n === 1 ? '' : 's'}`;

const UNAVAILABLE_DESCRIPTION =
  'The database or the workflow service is busy or unreachable; retry after `Retry-After` seconds';

/** The credits and scope sentences every metered or scoped operation's description ends with. */
function describeOperation(route: AnyRoute): string {
  const parts = [route.description.trim()];
  const kinds: readonly CreditKind[] = route.credits ?? [];
  if (kinds.length === 1) {
    parts.push(`Costs ${credits(CREDIT_COSTS[kinds[0]!])} (\`${kinds[0]}\`), charged before any work; 402 when short.`);
  } else if (kinds.length > 1) {
    const prices = kinds.map((kind) => `${credits(CREDIT_COSTS[kind])} (\`${kind}\`)`).join(', ');
    parts.push(`Costs one of ${prices}, charged before any work; 402 when short.`);
  }
  if (route.scope) parts.push(`Requires the \`${route.scope}\` scope.`);
  return parts.join('\n\n');
}

function credentialsOf(route: AnyRoute): readonly CredentialKind[] {
  if (route.credentials) return route.credentials;
  if (route.public) return [];
  const mcp = !route.scope || MCP_TOKEN_SCOPES.includes(route.scope);
  return mcp ? ['api_key', 'user_jwt', 'mcp_token'] : ['api_key', 'user_jwt'];
}

// A body schema with a default (a bare POST approves a merge) makes the body optional.
const bodyRequired = (route: AnyRoute) => !(route.body as z.ZodType).safeParse(undefined).success;

const pathParams = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!);

/**
 * Every status the route can answer with, and its body: the route's own outcomes plus those that
 * follow from its shape, so a new route is documented right without listing them.
 */
function responsesOf(route: AnyRoute): Record<string, ResponseConfig> {
  const responses: Record<string, ResponseConfig> = {};
  const outcome = (status: number, description: string, body: z.ZodType = ErrorBody, headers = {}) => {
    responses[status] = { description, headers: { ...TRACE_HEADERS, ...headers }, content: json(body) };
  };
  const own = (status: number): RouteOutcome | undefined => route.errors?.[status];
  const ownText = (status: number) => {
    const entry = own(status);
    return typeof entry === 'string' ? entry : entry?.description;
  };
  const refine = (status: number, generic: string) => [ownText(status), generic].filter(Boolean).join('; or ');

  const status = route.status ?? 200;
  const declared = route.produces;
  const produces: Record<string, z.ZodType> =
    declared === undefined
      ? {}
      : typeof declared === 'string'
        ? { [declared]: z.string() }
        : Array.isArray(declared)
          ? Object.fromEntries((declared as readonly string[]).map((type) => [type, z.string()]))
          : { ...(declared as Readonly<Record<string, z.ZodType>>) };
  responses[status] = {
    description: route.summary,
    headers: { ...TRACE_HEADERS, ...(writes(route) ? WRITE_POSITION : {}), ...(route.responseHeaders ?? {}) },
    ...(route.response ? { content: json(route.response) } : {}),
    ...(Object.keys(produces).length
      ? { content: Object.fromEntries(Object.entries(produces).map(([type, schema]) => [type, { schema }])) }
      : {}),
  };

  const hasInput = route.params || route.query || route.body || !route.public;
  if (route.body) {
    outcome(400, refine(400, 'The body is not well-formed JSON'));
    outcome(413, refine(413, `The body is larger than ${JSON_BODY_LIMIT}`));
    const mediaTypes = JSON_MEDIA_TYPES.map((type) => `\`${type}\``).join(' or ');
    outcome(
      415,
      refine(
        415,
        `A body whose Content-Type is not ${mediaTypes}, or whose Content-Encoding is not ` +
          'gzip, deflate, br or identity',
      ),
    );
  }
  if (!route.public) {
    outcome(401, 'Missing, invalid, expired or revoked credential', ErrorBody, {
      'WWW-Authenticate': { $ref: '#/components/headers/WWWAuthenticate' },
    });
    if (route.credits) outcome(402, 'Insufficient credits, or the account is locked; nothing ran', InsufficientCredits);
    if (route.scope) outcome(403, refine(403, `The credential lacks the \`${route.scope}\` scope`));
    // Every authenticated route honours ?workspace_id= (mountRoutes), so every one can answer 404.
    outcome(404, refine(404, '`workspace_id` names no workspace the caller belongs to'));
  }
  if (hasInput) outcome(422, 'Validation error, located by `loc`', HTTPValidationError);
  if (!route.public) {
    outcome(429, refine(429, 'Too many requests; retry after `Retry-After` seconds'), ErrorBody, {
      'Retry-After': { $ref: '#/components/headers/RetryAfter' },
    });
  }
  outcome(500, 'Internal server error (never the inner text)');
  if (!route.public) {
    // Every authenticated route reads the database: a pool that cannot hand out a connection in
    // time is 503, a statement past its timeout 504 (src/platform/api/errors.ts).
    outcome(503, refine(503, UNAVAILABLE_DESCRIPTION), ErrorBody, {
      'Retry-After': { $ref: '#/components/headers/RetryAfter' },
    });
    outcome(504, refine(504, 'The database or a workflow did not answer in time'));
  }
  for (const [code, entry] of Object.entries(route.errors ?? {})) {
    if (responses[code] || entry === undefined) continue;
    // A public route that limits its own rate (the webhook intake) says when to retry, as the limiter does.
    const headers = code === '429' ? { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } } : {};
    if (typeof entry === 'string') outcome(Number(code), entry, ErrorBody, headers);
    else outcome(Number(code), entry.description, entry.body, headers);
  }
  if (pathParams(route.path).length && !responses[404]) {
    throw new Error(`${route.method.toUpperCase()} ${route.path}: a route with path parameters must declare its 404`);
  }
  return responses;
}

/**
 * A body the handler reads as bytes. OpenAPI 3.1 says raw bytes with `contentMediaType` and no `type`;
 * `format: binary` is the 3.0 idiom, and validating generated clients refuse a Buffer or string for it.
 */
const rawBodyOf = (raw: NonNullable<AnyRoute['rawBody']>) => ({
  description: raw.description,
  required: false,
  content: Object.fromEntries(
    raw.mediaTypes.map((type) => [
      type,
      { schema: { contentMediaType: type }, example: raw.examples?.[type] ?? raw.example },
    ]),
  ),
});

/** The query schema the document shows: the route's own, plus the `workspace_id` every authenticated route takes. */
function queryOf(route: AnyRoute, workspaceId: z.ZodType): z.ZodObject | undefined {
  const query = route.query as z.ZodObject | undefined;
  if (route.public || pathParams(route.path).includes('workspace_id') || query?.shape.workspace_id) return query;
  return (query ?? z.object({})).extend({ workspace_id: workspaceId });
}

/** The OpenAPI 3.1 document, generated from the same zod schemas that validate requests. */
export function buildOpenApiDocument(routes: readonly AnyRoute[], tagDescriptions: TagDescriptions) {
  const described: TagDescriptions = { ...OPENAPI_TAGS, ...tagDescriptions };
  assertRoutesDocumented(routes);
  const registry = new OpenAPIRegistry();
  const used = new Set<CredentialKind>();
  for (const route of routes) for (const kind of credentialsOf(route)) used.add(kind);
  for (const kind of Object.keys(SECURITY_SCHEMES) as CredentialKind[]) {
    if (!used.has(kind)) continue;
    const { name, scheme } = SECURITY_SCHEMES[kind];
    registry.registerComponent('securitySchemes', name, scheme as never);
  }
  registry.registerComponent('headers', 'RequestId', {
    description: 'This request’s id, for support and logs.',
    schema: { type: 'string', format: 'uuid' },
  });
  registry.registerComponent('headers', 'CorrelationId', {
    description:
      'The client’s `X-Correlation-Id` when it sent a uuid, else a fresh one; follows the work into audit rows.',
    schema: { type: 'string', format: 'uuid' },
  });
  registry.registerComponent('headers', 'WriteLsn', {
    description:
      'With a standby (DATABASE_REPLICA_URL) only: the WAL position of this request’s last write. Send it back as ' +
      '`Weft-Read-After` and the next read sees the write (read-your-writes).',
    schema: { type: 'string', pattern: '^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$' },
  });
  registry.registerComponent('headers', 'RetryAfter', {
    description: 'Seconds after which a retry may succeed.',
    schema: { type: 'integer', minimum: 1 },
  });
  registry.registerComponent('headers', 'WWWAuthenticate', {
    description: 'The scheme to authenticate with: `Bearer realm="weft"`.',
    schema: { type: 'string' },
  });
  const workspaceId = z
    .uuid()
    .optional()
    .describe('Must name a workspace the caller belongs to (404 otherwise); defaults to the credential’s.');

  const tags = new Set<string>();
  for (const route of routes) {
    for (const tag of route.tags) {
      if (!Object.hasOwn(described, tag))
        throw new Error(`${route.operationId}: no feature describes the tag '${tag}'`);
      tags.add(tag);
    }
    const query = queryOf(route, workspaceId);
    const headers = route.reads === 'standby' ? (route.headers ?? z.object({})).extend(READ_AFTER) : route.headers;
    const config: RouteConfig = {
      method: route.method,
      path: route.path,
      operationId: route.operationId,
      summary: route.summary,
      description: describeOperation(route),
      tags: [...route.tags],
      security: credentialsOf(route).map((kind) => ({ [SECURITY_SCHEMES[kind].name]: [] })),
      request: {
        ...(route.params ? { params: route.params } : {}),
        ...(query ? { query } : {}),
        ...(headers ? { headers } : {}),
        ...(route.body ? { body: { content: json(route.body, route.example), required: bodyRequired(route) } } : {}),
        ...(route.rawBody ? { body: rawBodyOf(route.rawBody) } : {}),
      },
      responses: responsesOf(route),
    };
    registry.registerPath(config);
  }
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Weft knowledge-graph service',
      version: API_VERSION,
      description:
        'A workspace-scoped knowledge graph for AI agents: typed nodes and edges, prompts that extract ' +
        'facts or answer from the graph, search, traversals, and a credit ledger that meters paid operations.',
      // package.json: UNLICENSED. No public address exists yet to put in contact.url or .email.
      contact: { name: 'Weft maintainers' },
      license: { name: 'Proprietary (all rights reserved)' },
    },
    servers: [{ url: '/' }],
    tags: [...tags].sort().map((name) => ({ name, description: described[name] })),
  });
}
