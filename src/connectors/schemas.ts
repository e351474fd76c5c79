import { z } from 'zod';
import { LIMITS } from '../rules/limits';

const limits = LIMITS.connectors;
const secret = z.string().min(1).max(limits.secretChars);
const timestamp = z.iso.datetime({ offset: true });

/** An absolute http(s) URL; the address it resolves to is judged at connect time (docs/connectors.md). */
export const ConnectorUrl = z
  .string()
  .max(limits.urlChars)
  .refine(
    (value) => {
      try {
        const url = new URL(value);
        return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '' && !url.username;
      } catch {
        return false;
      }
    },
    { message: 'Must be an absolute http:// or https:// URL without credentials' },
  );

export const ConnectorAuth = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('none') }).strict(),
    z.object({ type: z.literal('bearer'), token: secret }).strict(),
    z
      .object({
        type: z.literal('header'),
        name: z
          .string()
          .regex(/^[A-Za-z0-9-]{1,64}$/)
          .refine(
            (name) => !['host', 'content-length', 'content-type', 'idempotency-key'].includes(name.toLowerCase()),
            {
              message: 'This header is Weft’s to set',
            },
          ),
        value: secret,
      })
      .strict(),
    z
      .object({
        type: z.literal('oauth_client_credentials'),
        token_url: ConnectorUrl,
        client_id: z.string().min(1).max(512),
        client_secret: secret,
        scope: z.string().max(1024).optional(),
      })
      .strict(),
  ])
  .meta({ id: 'ConnectorAuth' });
export type ConnectorAuth = z.output<typeof ConnectorAuth>;

const name = z
  .string()
  .regex(/^[a-z][a-z0-9_]{1,30}$/, 'A lower-case letter, then 1–30 lower-case letters, digits or underscores')
  .describe('The tools’ prefix: `<name>.<tool>`. Unique in the workspace; a built-in area (`ontology`, …) is 409.');

const settings = {
  timeout_seconds: z
    .number()
    .int()
    .min(1)
    .max(limits.timeoutSeconds.max)
    .describe(
      `A call’s whole exchange; longer is a failed call \`timeout\` (default ${limits.timeoutSeconds.default}).`,
    ),
  max_response_bytes: z
    .number()
    .int()
    .min(1024)
    .max(limits.maxResponseBytes.max)
    .describe('A larger answer is a failed call `response_too_large` (default 1 MiB).'),
  credits_per_call: z
    .number()
    .int()
    .min(0)
    .max(limits.creditsPerCall.max)
    .describe('Charged before each call, refunded when it fails (default 1).'),
};

/** Either kind; the service checks the kind's own fields (an OpenAPI document for `http`). */
export const CreateConnectorRequest = z
  .object({
    name,
    kind: z.enum(['mcp', 'http']),
    url: ConnectorUrl.optional().describe('`mcp`: the server’s Streamable HTTP endpoint.'),
    openapi: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('`http`: an OpenAPI 3.0/3.1 document; each operation with an operationId becomes a tool.'),
    base_url: ConnectorUrl.optional().describe('`http`: where calls go; default the document’s first server.'),
    auth: ConnectorAuth.default({ type: 'none' }),
    timeout_seconds: settings.timeout_seconds.default(limits.timeoutSeconds.default),
    max_response_bytes: settings.max_response_bytes.default(limits.maxResponseBytes.default),
    credits_per_call: settings.credits_per_call.default(limits.creditsPerCall.default),
  })
  .strict()
  .meta({ id: 'CreateConnectorRequest' });
export type CreateConnectorRequest = z.output<typeof CreateConnectorRequest>;

export const UpdateConnectorRequest = z
  .object({
    auth: ConnectorAuth.optional().describe('Replaces the credentials (rotation); the tools are discovered again.'),
    timeout_seconds: settings.timeout_seconds.optional(),
    max_response_bytes: settings.max_response_bytes.optional(),
    credits_per_call: settings.credits_per_call.optional(),
  })
  .strict()
  .meta({ id: 'UpdateConnectorRequest' });
export type UpdateConnectorRequest = z.output<typeof UpdateConnectorRequest>;

export const ConnectorIdParams = z.object({ id: z.uuid() });

// Koa parses path params as strings: coerced, bounded.
export const ConnectorVersionParams = z.object({
  id: z.uuid(),
  version: z.coerce
    .number()
    .int()
    .min(1)
    .max(2 ** 31 - 1),
});

/** What a read shows of the credentials: never the secret. */
export const AuthView = z
  .object({
    type: z.enum(['none', 'bearer', 'header', 'oauth_client_credentials']),
    fingerprint: z.string().nullable().describe('The first 12 hex digits of the secret’s SHA-256.'),
    last4: z.string().nullable().describe('The secret’s last 4 characters.'),
    header_name: z.string().optional(),
    token_url: z.string().optional(),
    client_id: z.string().optional(),
    scope: z.string().optional(),
  })
  .meta({ id: 'ConnectorAuthView' });
export type AuthView = z.infer<typeof AuthView>;

export const ConnectorToolView = z
  .object({
    name: z.string().describe('The capability’s name, `<connector>.<tool>`; callable as `POST /v1/cap/<name>`.'),
    remote_name: z.string().describe('The tool’s (or operationId’s) own name at the remote end.'),
    description: z.string(),
    read_only: z.boolean().describe('MCP `readOnlyHint`; HTTP GET and HEAD. A run asks a person before any other.'),
    input_schema: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'ConnectorTool' });

export const ConnectorView = z
  .object({
    id: z.uuid(),
    name: z.string(),
    kind: z.enum(['mcp', 'http']),
    url: z.string(),
    auth: AuthView,
    timeout_seconds: z.number().int(),
    max_response_bytes: z.number().int(),
    credits_per_call: z.number().int(),
    version: z
      .number()
      .int()
      .describe(
        'The current version of the tool list: grows when a refresh (or a rotation) changed it. A run keeps ' +
          'the versions it started with (`GET /v1/connectors/{id}/versions/{version}` shows a kept one).',
      ),
    tools: z.array(ConnectorToolView).describe('The current version’s tools.'),
    created_at: timestamp,
    updated_at: timestamp,
    refreshed_at: timestamp,
  })
  .meta({ id: 'Connector' });
export type ConnectorView = z.input<typeof ConnectorView>;

export const ConnectorList = z
  .object({ connectors: z.array(ConnectorView.omit({ tools: true }).extend({ tool_count: z.number().int() })) })
  .meta({ id: 'ConnectorList' });

export const ConnectorVersionView = z
  .object({
    connector_id: z.uuid(),
    name: z.string(),
    version: z.number().int(),
    current: z.boolean().describe('Whether this is the connector’s version now.'),
    created_at: timestamp.describe('When the remote end first listed this version’s tools.'),
    tools: z.array(ConnectorToolView),
  })
  .meta({ id: 'ConnectorVersion' });
export type ConnectorVersionView = z.input<typeof ConnectorVersionView>;
