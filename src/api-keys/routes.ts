import { z } from 'zod';
import { defineRoute } from '../platform/api/route';
import { LIMITS } from '../rules/limits';
import {
  ApiKeyCreateRequest,
  ApiKeyCreateResponse,
  ApiKeyIdParams,
  ApiKeyRow,
  ApiKeyUsageSummary,
  ScopeList,
  UsageQuery,
} from './schemas';
import type { ApiKeyService } from './service';

const tags = ['api-keys'] as const;
const scope = 'api_keys:manage' as const;
const notYours = { 404: 'Not the caller’s key' };

export const apiKeyRoutes = (keys: ApiKeyService) => [
  defineRoute({
    method: 'get',
    path: '/v1/auth/me/api-keys/scopes',
    operationId: 'listScopes',
    description: 'Every scope string a key can carry, sorted. A user JWT carries all of them.',
    summary: 'List the valid scope strings',
    tags,
    response: ScopeList,
    handler: async () => keys.scopes(),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/auth/me/api-keys',
    operationId: 'listApiKeys',
    summary: 'List the caller’s API keys, newest first, revoked included',
    description: 'The caller’s own keys; only the prefix of each secret is ever shown again.',
    tags,
    scope,
    response: z.array(ApiKeyRow),
    handler: ({ auth }) => keys.list(auth),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/auth/me/api-keys',
    operationId: 'createApiKey',
    summary: 'Create an API key; the token is shown once',
    description:
      'Creates a key for the caller with a subset of the caller’s own scopes (unknown scope strings are ' +
      'dropped). Only a hash is stored: the plaintext token is in this response and nowhere else.',
    tags,
    scope,
    body: ApiKeyCreateRequest,
    example: { name: 'ci-reader', scopes: ['ontology:read', 'search:read'], expires_in_days: 90 },
    status: 201,
    response: ApiKeyCreateResponse,
    errors: { 403: 'Requested scopes the caller lacks', 404: 'Workspace not visible to the caller' },
    handler: ({ auth, body }) => keys.create(auth, body),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/auth/me/api-keys/{api_key_id}',
    operationId: 'getApiKey',
    summary: 'Get one of the caller’s API keys',
    description: 'One key row; another user’s key is 404, so ids reveal nothing.',
    tags,
    scope,
    params: ApiKeyIdParams,
    response: ApiKeyRow,
    errors: notYours,
    handler: ({ auth, params }) => keys.get(auth, params.api_key_id),
  }),
  defineRoute({
    method: 'delete',
    path: '/v1/auth/me/api-keys/{api_key_id}',
    operationId: 'revokeApiKey',
    summary: 'Revoke an API key (kept as an audit row)',
    description:
      'Sets `revoked_at` and keeps the row. Revoking again is a no-op; the key stops working from the next ' +
      'request, so a key may revoke itself.',
    tags,
    scope,
    params: ApiKeyIdParams,
    response: ApiKeyRow,
    errors: notYours,
    handler: ({ auth, params }) => keys.revoke(auth, params.api_key_id),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/auth/me/api-keys/{api_key_id}/usage',
    operationId: 'getApiKeyUsage',
    summary: 'Request counts of an API key: total and per day',
    description:
      `Requests made with the key over the last \`days\` days (default ${LIMITS.usageWindowDays.default}, ` +
      `at most ${LIMITS.usageWindowDays.max}), in total and per day.`,
    tags,
    scope,
    params: ApiKeyIdParams,
    query: UsageQuery,
    response: ApiKeyUsageSummary,
    errors: notYours,
    handler: ({ auth, params, query }) => keys.usage(auth, params.api_key_id, query.days),
  }),
];
