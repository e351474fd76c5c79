import { z } from 'zod';

const timestamp = z.iso.datetime({ offset: true });

/** The authorization request as `/oauth/authorize` received it, and the person's choice of workspace. */
export const OAuthConsentRequest = z
  .object({
    client_id: z.string().min(1).max(200),
    redirect_uri: z.string().min(1).max(2000),
    response_type: z.literal('code').optional(),
    code_challenge: z.string().max(200).optional(),
    code_challenge_method: z.string().max(20).optional(),
    scope: z.string().max(2000).optional(),
    state: z.string().max(2000).optional(),
    resource: z.string().max(2000).optional(),
    workspace_id: z.uuid().describe('The workspace the client may act in, one the person belongs to.'),
    decision: z.enum(['approve', 'deny']),
  })
  .meta({ id: 'OAuthConsentRequest' });

export const OAuthConsentResponse = z
  .object({
    redirect_to: z.string().describe('The client’s redirect URI with `code` (or `error`), `state` and `iss`.'),
    grant_id: z.uuid().nullable().describe('The grant approved; null when denied.'),
  })
  .meta({ id: 'OAuthConsentResponse' });

export const OAuthClientInfo = z
  .object({
    client_id: z.string(),
    client_name: z.string().nullable(),
    redirect_uris: z.array(z.string()),
    scopes: z.array(z.string()).describe('What the consent page offers: every scope an MCP token may hold.'),
  })
  .meta({ id: 'OAuthClientInfo' });

export const OAuthGrantRow = z
  .object({
    id: z.uuid(),
    client_id: z.string(),
    client_name: z.string().nullable(),
    scopes: z.array(z.string()),
    resource: z.string(),
    workspace_id: z.uuid(),
    created_at: timestamp,
    revoked_at: timestamp.nullable(),
    revoked_reason: z.string().nullable().describe('revoked_by_user, revoked_by_client, code_reused, …'),
  })
  .meta({ id: 'OAuthGrantRow' });

export const ClientParams = z.object({ client_id: z.string().min(1).max(200) });
export const WorkspaceParams = z.object({ workspace_id: z.uuid() });
export const WorkspaceGrantParams = z.object({ workspace_id: z.uuid(), grant_id: z.uuid() });

export const OAuthWorkspace = z
  .object({ id: z.uuid(), name: z.string(), is_default: z.boolean() })
  .meta({ id: 'OAuthWorkspace' });
