import { z } from 'zod';
import { ApiKeyRow } from '../api-keys/schemas';
import { defineRoute } from '../platform/api/route';
import { LIMITS } from '../rules/limits';
import {
  McpTokenCreateBody,
  McpTokenCreateResponse,
  MintMCPTokenRequest,
  MintMCPTokenResponse,
  WorkspaceParams,
  WorkspaceTokenParams,
} from './schemas';
import type { McpTokenService } from './service';

const tags = ['mcp-tokens'] as const;
const scope = 'mcp_tokens:manage' as const;
const notMember = 'Workspace missing or the caller is not a member';

export const mcpTokenRoutes = (tokens: McpTokenService) => [
  defineRoute({
    method: 'post',
    path: '/v1/mcp/token',
    operationId: 'mintMcpToken',
    summary: 'Mint an MCP-audience JWT for a workspace',
    description:
      'A user-bound JWT for the MCP server, for a workspace the caller belongs to. ' +
      `At most ${LIMITS.mcpMint.requests} mints per ${LIMITS.mcpMint.windowSeconds} seconds per user (429 beyond).`,
    tags,
    scope,
    body: MintMCPTokenRequest,
    example: { workspace_id: '0b6f2d4e-8c1a-4f3b-9d2e-5a7c6b8e9f01', expires_in_days: 7 },
    status: 201,
    response: MintMCPTokenResponse,
    errors: {
      404: notMember,
      429: `More than ${LIMITS.mcpMint.requests} mints in ${LIMITS.mcpMint.windowSeconds} seconds by this user`,
    },
    handler: ({ auth, body }) => tokens.mint(auth, body),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/workspaces/{workspace_id}/mcp-tokens',
    operationId: 'createMcpToken',
    summary: 'Create a named MCP token; the token is shown once',
    description: 'A named, revocable MCP token for the caller in the workspace; only its hash is stored.',
    tags,
    scope,
    params: WorkspaceParams,
    body: McpTokenCreateBody,
    example: { name: 'claude-desktop', expires_in_days: 30 },
    status: 201,
    response: McpTokenCreateResponse,
    errors: { 404: notMember },
    handler: ({ auth, params, body }) => tokens.create(auth, params.workspace_id, body),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/workspaces/{workspace_id}/mcp-tokens',
    operationId: 'listMcpTokens',
    summary: 'The caller’s own MCP tokens, newest first, revoked and expired included',
    description:
      'The caller’s MCP tokens of the workspace, in the API key row projection; other users’ are never listed.',
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
    operationId: 'revokeMcpToken',
    summary: 'Revoke one of the caller’s MCP tokens (idempotent)',
    description: 'Revokes the token from the next request on; revoking a revoked token answers 204 again.',
    tags,
    scope,
    params: WorkspaceTokenParams,
    status: 204,
    errors: { 404: 'Not found, not owned, or not an MCP token of that workspace' },
    handler: ({ auth, params }) => tokens.revoke(auth, params.workspace_id, params.key_id),
  }),
];
