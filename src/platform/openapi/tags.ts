/**
 * The API's tags: every route names tags from this list, and the document declares the ones in use
 * with these descriptions (tags of features not built yet stay out of the document until a route
 * uses them).
 */
export const API_TAGS = {
  health: 'Liveness and readiness of the process and its dependencies.',
  meta: 'The OpenAPI document and the browsable reference.',
  'api-keys': 'The caller’s API keys: create, list, revoke, usage. Secrets are shown once.',
  'mcp-tokens': 'MCP-audience credentials for agent tooling: short-lived JWTs and named tokens.',
  ontology: 'Nodes, edges, the type catalog and graph traversals of the workspace.',
  'ontology-config': 'The workspace’s search, importance and resolver settings.',
  prompt: 'Free-text prompts that extract graph facts, answer from the graph, or both (metered).',
  code: 'The code graph: bulk ingest of a repository’s files, symbols, calls, tests and commits as code.* nodes.',
  search: 'Vector, structural, keyword and hybrid search over nodes (metered).',
  merges: 'The person-merge queue: candidates proposed by the resolver, approved or rejected by a person.',
  capabilities: 'Agent tools mounted as POST /v1/cap/<tool-name>, with idempotency and a credit envelope.',
  'capabilities:read': 'Capabilities that only read.',
  'capabilities:write': 'Capabilities that change state; replayable with an Idempotency-Key.',
  mcp: 'The MCP server: the capability registry as Model Context Protocol tools over Streamable HTTP.',
  billing: 'The tenant’s credit balance and the workspace’s credit ledger.',
  console: 'The reviewer console: a browser page over this API (approvals, merges, runs, graph, credits).',
  runs: 'Agent runs: dispatch and follow executions.',
  approvals: 'Human approvals that suspended runs wait on.',
  triggers: 'Signed inbound webhooks that start runs.',
  temporal: 'Operator tools for Temporal: the codec server that decrypts workflow payloads for the UI and CLI.',
} as const;

export type ApiTag = keyof typeof API_TAGS;
