import { z } from 'zod';
import { defineRoute } from '../platform/api/route';
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

const tags = ['api-keys'];
const scope = 'api_keys:manage' as const;
const notYours = { 404: 'Not the caller’s key' };

export const apiKeyRoutes = (keys: ApiKeyService) => [
  defineRoute({
    method: 'get',
    path: '/v1/auth/me/api-keys/scopes',
    summary: 'List the valid scope strings',
    tags,
    response: ScopeList,
    handler: async () => keys.scopes(),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/auth/me/api-keys',
    summary: 'List the caller’s API keys, newest first, revoked included',
    tags,
    scope,
    response: z.array(ApiKeyRow),
    handler: ({ auth }) => keys.list(auth),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/auth/me/api-keys',
    summary: 'Create an API key; the token is shown once',
    tags,
    scope,
    body: ApiKeyCreateRequest,
    status: 201,
    response: ApiKeyCreateResponse,
    errors: { 403: 'Requested scopes the caller lacks', 404: 'Workspace not visible to the caller' },
    handler: ({ auth, body }) => keys.create(auth, body),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/auth/me/api-keys/{api_key_id}',
    summary: 'Get one of the caller’s API keys',
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
    summary: 'Revoke an API key (kept as an audit row)',
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
    summary: 'Request counts of an API key: total and per day',
    tags,
    scope,
    params: ApiKeyIdParams,
    query: UsageQuery,
    response: ApiKeyUsageSummary,
    errors: notYours,
    handler: ({ auth, params, query }) => keys.usage(auth, params.api_key_id, query.days),
  }),
];
