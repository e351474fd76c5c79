import { z } from 'zod';
import { SCOPES } from '../platform/auth/scopes';
import { LIMITS } from '../rules/limits';

const timestamp = z.iso.datetime({ offset: true });

/** The projection of an API key or MCP token row; never the hash. */
export const ApiKeyRow = z
  .object({
    id: z.uuid(),
    kind: z.enum(['api_key', 'mcp_token']),
    name: z.string(),
    scopes: z.array(z.string()),
    prefix: z.string().describe('The only part of the secret shown after creation.'),
    workspace_id: z.uuid(),
    created_at: timestamp,
    expires_at: timestamp.nullable(),
    revoked_at: timestamp.nullable(),
    last_used_at: timestamp.nullable(),
    minted_by: z
      .object({
        kind: z.enum(['user_jwt', 'api_key', 'mcp_token', 'oauth_grant', 'provisioning']),
        id: z
          .string()
          .nullable()
          .describe('The JWT’s jti, the key’s or token’s id, the grant’s id; null for provisioning.'),
      })
      .nullable()
      .describe(
        'The credential that minted this one (its user is this key’s own). A key or token minted from the ' +
          'key that dispatched a run counts as that run’s dispatcher (docs/approvals.md). Null when not known ' +
          '(made before it was recorded).',
      ),
  })
  .meta({ id: 'ApiKeyRow' });
export type ApiKeyRow = z.infer<typeof ApiKeyRow>;

export const ApiKeyCreateRequest = z
  .object({
    name: z.string().trim().min(1).max(100),
    scopes: z
      .array(z.string().max(100))
      .max(100)
      .describe(
        'Scope strings; unknown ones are dropped (`temporal:decode`, an operator’s, is a 422). ' +
          `Known: ${SCOPES.join(', ')}`,
      ),
    workspace: z.uuid().optional().describe("The key's workspace; defaults to the caller's."),
    expires_in_days: z.number().int().min(1).max(3650).optional(),
  })
  .meta({ id: 'ApiKeyCreateRequest' });

export const ApiKeyCreateResponse = ApiKeyRow.extend({
  token: z.string().describe('The plaintext key. Shown only in this response.'),
}).meta({ id: 'ApiKeyCreateResponse' });

export const ApiKeyIdParams = z.object({ api_key_id: z.uuid() });

export const UsageQuery = z.object({
  days: z.coerce.number().int().min(1).max(LIMITS.usageWindowDays.max).default(LIMITS.usageWindowDays.default),
});

export const ApiKeyUsageSummary = z
  .object({
    api_key_id: z.uuid(),
    days: z.number().int(),
    total_requests: z.number().int(),
    last_used_at: timestamp.nullable(),
    daily: z.array(z.object({ date: z.iso.date(), requests: z.number().int() })),
  })
  .meta({ id: 'ApiKeyUsageSummary' });

export const ScopeList = z.array(z.string()).meta({ id: 'ScopeList' });
