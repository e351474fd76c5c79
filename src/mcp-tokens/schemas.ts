import { z } from 'zod';
import { ApiKeyRow } from '../api-keys/schemas';

const ttlDays = z.number().int().min(1).max(365);

export const MintMCPTokenRequest = z
  .object({ workspace_id: z.uuid(), expires_in_days: ttlDays.optional() })
  .meta({ id: 'MintMCPTokenRequest' });

export const MintMCPTokenResponse = z
  .object({
    token: z.string().describe('An MCP-audience JWT. Shown only in this response.'),
    token_type: z.literal('Bearer'),
    token_id: z.uuid(),
    workspace_id: z.uuid(),
    expires_at: z.iso.datetime({ offset: true }),
    expires_in: z.number().int().describe('Seconds until expiry.'),
  })
  .meta({ id: 'MintMCPTokenResponse' });

export const McpTokenCreateBody = z
  .object({ name: z.string().trim().min(1).max(100), expires_in_days: ttlDays.optional() })
  .meta({ id: 'McpTokenCreateBody' });

export const McpTokenCreateResponse = ApiKeyRow.extend({
  token: z.string().describe('The plaintext MCP token (a JWT). Shown only in this response.'),
}).meta({ id: 'McpTokenCreateResponse' });

export const WorkspaceParams = z.object({ workspace_id: z.uuid() });
export const WorkspaceTokenParams = z.object({ workspace_id: z.uuid(), key_id: z.uuid() });
