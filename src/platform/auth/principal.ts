import type { ScopeName } from './scopes';

export type CredentialRef = { kind: 'user_jwt' } | { kind: 'api_key' | 'mcp_token'; id: string };

/** The authenticated caller, and the one workspace this request reads and writes. */
export interface Principal {
  userId: string;
  workspaceId: string;
  tenantId: string;
  scopes: ReadonlySet<ScopeName>;
  credential: CredentialRef;
}

/** The database scope a principal's unit of work runs in. */
export const scopeOf = (principal: Principal) => ({ workspaceId: principal.workspaceId, userId: principal.userId });
