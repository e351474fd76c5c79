/**
 * Every scope string Weft knows, in one place. A route names the scope it needs; an API key
 * carries a subset; a user JWT carries all of them.
 */
export const SCOPES = [
  'api_keys:manage',
  'approvals:write',
  'billing:read',
  'capabilities:read',
  'capabilities:write',
  'mcp_tokens:manage',
  'ontology:read',
  'ontology:write',
  'prompt:write',
  'runs:read',
  'runs:write',
  'search:read',
  // An operator's: decrypts Temporal payloads of every workspace (the codec endpoint).
  'temporal:decode',
  'triggers:manage',
] as const;

export type ScopeName = (typeof SCOPES)[number];

const known = new Set<string>(SCOPES);

export const isScope = (value: string): value is ScopeName => known.has(value);

/**
 * Unknown scopes sent at key creation are dropped silently (knowledge-graph-service-api.md §5.4); the rest is sorted
 * and unique.
 */
export function normalizeScopes(requested: readonly string[]): ScopeName[] {
  return [...new Set(requested.filter(isScope))].sort();
}

/**
 * MCP tokens act for their user through agent tooling, but cannot manage credentials nor decrypt
 * payloads, and never resolve approvals: an approval is the human gate on what an agent does.
 */
export const MCP_TOKEN_SCOPES: ScopeName[] = SCOPES.filter(
  (scope) => !scope.endsWith(':manage') && scope !== 'temporal:decode' && scope !== 'approvals:write',
);
