import { z } from 'zod';
import { ApiKeyRow } from '../api-keys/schemas';
import { defineRoute } from '../platform/api/route';
import {
  McpTokenCreateBody,
  McpTokenCreateResponse,
  MintMCPTokenRequest,
  MintMCPTokenResponse,
  WorkspaceParams,
  WorkspaceTokenParams,
} from './schemas';
import type { McpTokenService } from './service';

const tags = ['mcp-tokens'];
const scope = 'mcp_tokens:manage' as const;
const notMember = 'Workspace missing or the caller is not a member';

export const mcpTokenRoutes = (tokens: McpTokenService) => [
  defineRoute({
    method: 'post',
    path: '/v1/mcp/token',
    summary: 'Mint an MCP-audience JWT for a workspace',
    tags,
    scope,
    body: MintMCPTokenRequest,
    status: 201,
    response: MintMCPTokenResponse,
    errors: { 404: notMember, 429: 'More than 60 mints in the last minute by this user' },
    handler: ({ auth, body }) => tokens.mint(auth, body),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/workspaces/{workspace_id}/mcp-tokens',
    summary: 'Create a named MCP token; the token is shown once',
    tags,
    scope,
    params: WorkspaceParams,
    body: McpTokenCreateBody,
    status: 201,
    response: McpTokenCreateResponse,
    errors: { 404: notMember },
    handler: ({ auth, params, body }) => tokens.create(auth, params.workspace_id, body),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/workspaces/{workspace_id}/mcp-tokens',
    summary: 'The caller’s own MCP tokens, newest first, revoked and expired included',
    tags,
    scope,
    params: WorkspaceParams,
    response: z.array(ApiKeyRow),
    errors: { 404: notMember },
    handler: ({ auth, params }) => tokens.list(auth, params.workspace_id),
  }),
  defineRoute({
    method: 'delete',
    path: '/v1/workspaces/{workspace_id}/mcp-tokens/{key_id}',
    summary: 'Revoke one of the caller’s MCP tokens (idempotent)',
    tags,
    scope,
    params: WorkspaceTokenParams,
    status: 204,
    errors: { 404: 'Not found, not owned, or not an MCP token of that workspace' },
    handler: ({ auth, params }) => tokens.revoke(auth, params.workspace_id, params.key_id),
  }),
];
