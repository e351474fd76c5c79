/**
 * Every scope string Weft knows, in one place. A route names the scope it needs; an API key
 * carries a subset; a user JWT carries all of them.
 */
export const SCOPES = [
  'api_keys:manage',
  // Setting the approval rules (`PUT /v1/approval-policies`): which tool calls need a person or are blocked.
  'approval_policies:manage',
  'approvals:write',
  'billing:read',
  'capabilities:read',
  'capabilities:write',
  // Registering remote MCP servers and HTTP APIs whose tools the workspace's agents and runs call.
  'connectors:manage',
  'mcp_tokens:manage',
  'ontology:read',
  'ontology:write',
  'prompt:write',
  'run_callbacks:manage',
  'runs:read',
  'runs:write',
  // Creating and changing run schedules (with runs:write, since they dispatch runs); pausing too.
  'schedules:manage',
  'search:read',
  'triggers:manage',
] as const;

export type ScopeName = (typeof SCOPES)[number];

const known = new Set<string>(SCOPES);

export const isScope = (value: string): value is ScopeName => known.has(value);

/**
 * An operator's, never a tenant's: it opens Temporal payloads of every workspace. Only an operator
 * token (`weft operator token`, minted on the owner connection) holds it; no user JWT, bootstrap key
 * or self-service key can (asking for it at key creation is a 422).
 */
export const OPERATOR_SCOPE = 'temporal:decode';

/**
 * Unknown scopes sent at key creation are dropped silently (knowledge-graph-service-api.md §5.4); the rest is sorted
 * and unique.
 */
export function normalizeScopes(requested: readonly string[]): ScopeName[] {
  return [...new Set(requested.filter(isScope))].sort();
}

/**
 * MCP tokens act for their user through agent tooling, but cannot manage credentials, and never
 * resolve approvals: an approval is the human gate on what an agent does.
 */
export const MCP_TOKEN_SCOPES: ScopeName[] = SCOPES.filter(
  (scope) => !scope.endsWith(':manage') && scope !== 'approvals:write',
);
