import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { LATEST_PROTOCOL_VERSION, McpError } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import { toWireName } from '../src/capabilities/wire-names';
import { capClient } from './helpers/cap';
import { createNode } from './helpers/graph';
import { as, request } from './helpers/http';
import { getStack } from './helpers/stack';
import { balanceBesidesEmbeddings, creditBalance, newTenant } from './helpers/tenants';

const open: Client[] = [];

/** The SDK's own client over Streamable HTTP, presenting `token` as the bearer credential. */
async function connect(token?: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${getStack().baseUrl}/mcp`), {
    requestInit: token ? { headers: { Authorization: `Bearer ${token}` } } : {},
  });
  const client = new Client({ name: 'weft-test', version: '1.0.0' });
  open.push(client);
  await client.connect(transport);
  return { client, transport };
}

const call = async (client: Client, name: string, args: Record<string, unknown> = {}, meta?: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) })) as CallToolResult;

const refusalOf = (result: CallToolResult) => {
  expect(result.isError, JSON.stringify(result)).to.equal(true);
  const error = result._meta?.['weft/error'] as { status: number; detail: any };
  expect(JSON.parse((result.content[0] as { text: string }).text)).to.deep.equal(error);
  return error;
};

describe('MCP server (/mcp)', () => {
  afterEach(async () => {
    for (const client of open.splice(0)) await client.close().catch(() => undefined);
  });

  it('lists the registry as tools: wire names, the /v1/cap schemas, annotations; the latest protocol', async () => {
    const tenant = await newTenant();
    const { client, transport } = await connect(tenant.api_key);
    expect(transport.protocolVersion).to.equal(LATEST_PROTOCOL_VERSION);
    expect(transport.sessionId).to.equal(undefined); // stateless
    expect(client.getServerVersion()?.name).to.equal('weft');
    expect(client.getServerCapabilities()).to.have.property('tools');

    const { tools } = await client.listTools();
    const registry = (await as(tenant.api_key).get('/v1/cap')).body.tools as any[];
    expect(tools.map((tool) => tool.name).sort()).to.deep.equal(registry.map((tool) => toWireName(tool.name)).sort());
    for (const described of registry) {
      const tool = tools.find((candidate) => candidate.name === toWireName(described.name))!;
      expect(tool.name).to.match(/^[a-zA-Z0-9_-]{1,64}$/);
      expect(tool.inputSchema).to.deep.equal(described.input_schema);
      expect(tool.outputSchema).to.deep.equal(described.output_schema);
      expect(tool.description).to.contain(described.description);
      expect(tool.annotations?.readOnlyHint).to.equal(described.tag === 'capabilities:read');
    }
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(byName.get('ontology_ask')!.description).to.contain('Costs 3 credits');
    expect(byName.get('agent_end_session')!.annotations).to.include({ readOnlyHint: false, idempotentHint: true });
    expect(byName.get('agent_release_claim')!.annotations).to.include({ idempotentHint: true });
    // A new session each time: only an idempotency key makes a repeat safe.
    expect(byName.get('agent_start_session')!.annotations).to.include({ idempotentHint: false });
  });

  it('runs a read tool like POST /v1/cap: same result, same credit, as structured content and text', async () => {
    const tenant = await newTenant(10);
    for (const name of ['Ada Lovelace', 'Ada Byron', 'Charles Babbage'])
      await createNode(tenant.api_key, 'person', name);
    const { client } = await connect(tenant.api_key);
    const found = await call(client, 'ontology_search', { query: 'Ada', top_k: 2 });
    expect(found.isError).to.not.equal(true);
    const results = (found.structuredContent as any).results;
    expect(results).to.have.length(2);
    expect(JSON.parse((found.content[0] as { text: string }).text)).to.deep.equal(found.structuredContent);
    expect(found._meta?.['weft/creditsCharged']).to.equal(1);
    expect(await balanceBesidesEmbeddings(tenant.tenant_id)).to.equal(9);

    const direct = await capClient(tenant.api_key)('ontology.search', { query: 'Ada', top_k: 2 });
    expect(results.map((row: any) => row.node.id)).to.deep.equal(
      direct.body.result.results.map((row: any) => row.node.id),
    );
  });

  it('runs a write tool whose effect the HTTP API sees', async () => {
    const tenant = await newTenant();
    const { client } = await connect(tenant.api_key);
    const started = await call(client, 'agent_start_session', { name: 'over mcp' });
    const { session_id, status } = started.structuredContent as any;
    expect(status).to.equal('active');
    const beat = await capClient(tenant.api_key)('agent.heartbeat', { session_id });
    expect(beat.status).to.equal(200);
    expect(beat.body.result).to.include({ session_id, status: 'active' });
    const [row] = await getStack().ownerDataSource.query(
      `SELECT workspace_id, name FROM agent_sessions WHERE id = $1`,
      [session_id],
    );
    expect(row).to.deep.equal({ workspace_id: tenant.workspace_id, name: 'over mcp' });
  });

  it('replays a write tool for a repeated _meta["weft/idempotencyKey"]; refuses the key on another body', async () => {
    const tenant = await newTenant();
    const { client } = await connect(tenant.api_key);
    const key = { 'weft/idempotencyKey': 'mcp-run-1' };
    const first = await call(client, 'agent_start_session', { name: 'once' }, key);
    const again = await call(client, 'agent_start_session', { name: 'once' }, key);
    expect(again.structuredContent).to.deep.equal(first.structuredContent);
    expect(first._meta).to.include({ 'weft/idempotencyKey': 'mcp-run-1' }).and.not.have.property('weft/replayed');
    expect(again._meta).to.include({ 'weft/replayed': true });
    const sessions = await getStack().ownerDataSource.query(`SELECT id FROM agent_sessions WHERE workspace_id = $1`, [
      tenant.workspace_id,
    ]);
    expect(sessions).to.have.length(1);

    // The same key as the HTTP header: one replay window whichever door the call came through.
    const overHttp = await capClient(tenant.api_key)('agent.start_session', { name: 'once' }, 'mcp-run-1');
    expect(overHttp.headers.get('idempotent-replayed')).to.equal('true');
    expect(overHttp.body.result).to.deep.equal(first.structuredContent);

    const reused = refusalOf(await call(client, 'agent_start_session', { name: 'twice' }, key));
    expect(reused.status).to.equal(409);
    expect(reused.detail.error).to.equal('idempotency_key_reused');
    const invalid = refusalOf(await call(client, 'agent_start_session', {}, { 'weft/idempotencyKey': '' }));
    expect(invalid.status).to.equal(422);
    expect(invalid.detail[0].loc).to.deep.equal(['_meta', 'weft/idempotencyKey']);
    // A run step's key (`<execution_id>:<step_no>`) is the run's own (review L-9).
    const stepKey = { 'weft/idempotencyKey': '7a1c2b9e-4d3f-4b8a-9c6e-2f1d0e9b8a7c:0' };
    const reserved = refusalOf(await call(client, 'agent_start_session', { name: 'x' }, stepKey));
    expect(reserved.status).to.equal(422);
    expect(reserved.detail[0].msg).to.match(/reserved for run steps/);
  });

  it('answers a bad argument with isError 422 located in the arguments', async () => {
    const tenant = await newTenant(5);
    const { client } = await connect(tenant.api_key);
    const refused = refusalOf(await call(client, 'ontology_search', { query: 'x', top_k: 101 }));
    expect(refused.status).to.equal(422);
    expect(refused.detail[0].loc).to.deep.equal(['arguments', 'top_k']);
    expect(await creditBalance(tenant.tenant_id)).to.equal(5);
  });

  it('refuses a write tool to a credential without capabilities:write, and lists it only its read tools', async () => {
    const tenant = await newTenant();
    const key = await as(tenant.user_jwt).post('/v1/auth/me/api-keys', {
      name: 'read-only agent',
      scopes: ['capabilities:read'],
    });
    const { client } = await connect(key.body.token);
    const { tools } = await client.listTools();
    expect(tools.length).to.be.greaterThan(0);
    expect(tools.every((tool) => tool.annotations?.readOnlyHint === true)).to.equal(true);
    const refused = refusalOf(await call(client, 'agent_start_session', { name: 'nope' }));
    expect(refused).to.deep.equal({ status: 403, detail: 'Missing scope capabilities:write' });
    const sessions = await getStack().ownerDataSource.query(`SELECT id FROM agent_sessions WHERE workspace_id = $1`, [
      tenant.workspace_id,
    ]);
    expect(sessions).to.deep.equal([]);
    expect((await call(client, 'billing_credits_balance')).isError).to.not.equal(true);
    // Nodes as resources need ontology:read, which this key lacks.
    const node = await createNode(tenant.api_key, 'thing', 'visible with ontology:read');
    const unread = await client.readResource({ uri: `weft://nodes/${node}` }).catch((caught: unknown) => caught);
    expect(unread).to.be.instanceOf(McpError);
    expect((unread as McpError).code).to.equal(-32600);
  });

  it('answers a credit shortfall as isError with the 402 detail, nothing charged', async () => {
    const tenant = await newTenant(0);
    const { client } = await connect(tenant.api_key);
    const refused = refusalOf(await call(client, 'ontology_search', { query: 'anything' }));
    expect(refused).to.deep.equal({
      status: 402,
      detail: { error: 'insufficient_credits', kind: 'ontology.search.hybrid', required: 1, available: 0 },
    });
    const ledger = await getStack().ownerDataSource.query(`SELECT id FROM credit_ledger WHERE workspace_id = $1`, [
      tenant.workspace_id,
    ]);
    expect(ledger).to.deep.equal([]);
  });

  it('an unknown tool is a protocol error (invalid params), not a tool result', async () => {
    const tenant = await newTenant();
    const { client } = await connect(tenant.api_key);
    const error = await call(client, 'agent_no_such_tool').catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(McpError);
    expect((error as McpError).code).to.equal(-32602);
  });

  it('takes an MCP token, and refuses it from the next request once revoked', async () => {
    const tenant = await newTenant(3);
    const minted = await as(tenant.user_jwt).post('/v1/mcp/token', { workspace_id: tenant.workspace_id });
    expect(minted.status).to.equal(201);
    const { client } = await connect(minted.body.token);
    const balance = await call(client, 'billing_credits_balance');
    expect(balance.structuredContent).to.include({ balance: 3 });

    const revoked = await as(tenant.user_jwt).delete(
      `/v1/workspaces/${tenant.workspace_id}/mcp-tokens/${minted.body.token_id}`,
    );
    expect(revoked.status).to.equal(204);
    const error = await call(client, 'billing_credits_balance').catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(StreamableHTTPError);
    expect((error as StreamableHTTPError).code).to.equal(401);
  });

  it('refuses a missing, invalid or expired credential with 401 and WWW-Authenticate: Bearer', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const headers = { accept: 'application/json, text/event-stream' };
    const missing = await request('POST', '/mcp', { body: initialize, headers });
    expect(missing.status).to.equal(401);
    // RFC 9728: the challenge names the resource metadata, where an MCP client starts OAuth (test/oauth.test.ts).
    expect(missing.headers.get('www-authenticate')).to.equal(
      `Bearer realm="weft", resource_metadata="${getStack().baseUrl}/.well-known/oauth-protected-resource/mcp"`,
    );
    const invalid = await request('POST', '/mcp', { body: initialize, headers, token: 'not-a-credential' });
    expect(invalid.status).to.equal(401);
    expect(invalid.headers.get('www-authenticate')).to.match(/^Bearer\b/);
    // An MCP token whose row has expired (its JWT's own exp is still ahead).
    const tenant = await newTenant();
    const minted = await as(tenant.user_jwt).post('/v1/mcp/token', { workspace_id: tenant.workspace_id });
    await getStack().ownerDataSource.query(
      `UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1`,
      [minted.body.token_id],
    );
    const expired = await request('POST', '/mcp', { body: initialize, headers, token: minted.body.token });
    expect(expired.status).to.equal(401);
    // What the SDK's client makes of it: a transport error carrying the 401.
    const error = await connect().catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(StreamableHTTPError);
    expect((error as StreamableHTTPError).code).to.equal(401);
  });

  it('isolation: a token for workspace A finds none of B’s nodes through ontology_search or as resources', async () => {
    const a = await newTenant(10);
    const b = await newTenant(10);
    const own = await createNode(a.api_key, 'person', 'Zebulon Ours');
    const theirs = await createNode(b.api_key, 'person', 'Zebulon Theirs');
    const minted = await as(a.user_jwt).post('/v1/mcp/token', { workspace_id: a.workspace_id });
    const { client } = await connect(minted.body.token);

    const found = await call(client, 'ontology_search', { query: 'Zebulon', top_k: 10 });
    const ids = (found.structuredContent as any).results.map((row: any) => row.node.id);
    expect(ids).to.deep.equal([own]);

    const read = await client.readResource({ uri: `weft://nodes/${own}` });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).to.include({ id: own, name: 'Zebulon Ours' });
    const foreign = await client.readResource({ uri: `weft://nodes/${theirs}` }).catch((caught: unknown) => caught);
    expect(foreign).to.be.instanceOf(McpError);
    expect((foreign as McpError).code).to.equal(-32002);
    const templates = await client.listResourceTemplates();
    expect(templates.resourceTemplates.map((template) => template.uriTemplate)).to.deep.equal([
      'weft://nodes/{node_id}',
    ]);
  });

  it('answers concurrent tool calls of two workspaces that reuse one JSON-RPC id, each with its own node', async () => {
    const a = await newTenant();
    const b = await newTenant();
    const nodes = [
      { token: a.api_key, id: await createNode(a.api_key, 'person', 'Ida of A') },
      { token: b.api_key, id: await createNode(b.api_key, 'person', 'Ida of B') },
    ];
    const accept = 'application/json, text/event-stream';
    const getNode = (token: string, nodeId: string) =>
      request('POST', '/mcp', {
        token,
        headers: { accept },
        body: {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'ontology_get_node', arguments: { node_id: nodeId } },
        },
      });
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => getNode(nodes[i % 2]!.token, nodes[i % 2]!.id)),
    );
    for (const [i, answer] of answers.entries()) {
      expect(answer.body.id).to.equal(1);
      expect(answer.body.result.structuredContent.node.id, `call ${i}`).to.equal(nodes[i % 2]!.id);
    }
    // Another workspace's node is not found, whoever else is calling.
    const foreign = await getNode(a.api_key, nodes[1]!.id);
    expect(refusalOf(foreign.body.result).status).to.equal(404);
  });

  it('refuses a page of another Origin (403, before the credential); none or an allowed one passes', async () => {
    const tenant = await newTenant();
    const accept = 'application/json, text/event-stream';
    const message = { jsonrpc: '2.0', id: 3, method: 'tools/list', params: {} };
    const send = (headers: Record<string, string>, token?: string) =>
      request('POST', '/mcp', { token, body: message, headers: { accept, ...headers } });
    // The transport's rule (DNS rebinding): a page of another origin never reaches the server.
    for (const origin of ['https://evil.example', 'null', 'http://mcp-client.test:8080']) {
      const refused = await send({ origin }, tenant.api_key);
      expect(refused.status, origin).to.equal(403);
      expect(refused.body.detail).to.match(/Origin/);
      expect((await send({ origin })).status, `${origin} without a credential`).to.equal(403);
    }
    const allowed = await send({ origin: 'http://mcp-client.test' }, tenant.api_key);
    expect(allowed.status, allowed.text).to.equal(200);
    expect(allowed.body.result.tools).to.be.an('array');
    expect((await send({}, tenant.api_key)).status).to.equal(200);
  });

  it('answers a message with a member JSON-RPC does not define with a 422 in the contract’s shape', async () => {
    const tenant = await newTenant();
    const accept = 'application/json, text/event-stream';
    for (const body of [
      { jsonrpc: '2.0', id: 4, method: 'tools/list', params: {}, extra: true },
      [{ jsonrpc: '2.0', id: 5, method: 'tools/list', sessionId: 'x' }],
    ]) {
      const refused = await request('POST', '/mcp', { token: tenant.api_key, body, headers: { accept } });
      expect(refused.status, JSON.stringify(refused.body)).to.equal(422);
      expect(refused.body.detail).to.be.an('array').that.is.not.empty;
      expect(refused.body.detail[0].loc[0]).to.equal('body');
      expect(refused.body).to.not.have.property('jsonrpc');
    }
  });

  it('is stateless: a bare tools/call POST needs no initialize first, and GET answers 405', async () => {
    const tenant = await newTenant();
    const accept = 'application/json, text/event-stream';
    const headers = {
      authorization: `Bearer ${tenant.api_key}`,
      accept,
      'content-type': 'application/json',
    };
    const message = {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'billing_credits_balance', arguments: {} },
    };
    // Through the helper that checks each answer against the OpenAPI document (McpResponse, JsonRpcError).
    const bare = await request('POST', '/mcp', { token: tenant.api_key, body: message, headers: { accept } });
    expect(bare.status).to.equal(200);
    expect(bare.headers.get('content-type')).to.match(/^application\/json/);
    expect(bare.headers.get('mcp-session-id')).to.equal(null);
    expect(bare.headers.get('x-request-id')).to.be.a('string');
    expect(bare.body).to.include({ jsonrpc: '2.0', id: 7 });
    expect(bare.body.result.structuredContent).to.deep.equal({ balance: 0, locked: false });
    const jsonOnly = await request('POST', '/mcp', {
      token: tenant.api_key,
      body: message,
      headers: { accept: 'application/json' },
    });
    expect(jsonOnly.status).to.equal(406);
    expect(jsonOnly.body.error.code).to.equal(-32000);

    const notification = { jsonrpc: '2.0', method: 'notifications/initialized' };
    const accepted = await fetch(`${getStack().baseUrl}/mcp`, {
      method: 'POST',
      headers,
      body: JSON.stringify(notification),
    });
    expect(accepted.status).to.equal(202);
    expect(await accepted.text()).to.equal('');

    const response = await fetch(`${getStack().baseUrl}/mcp`, {
      headers: { authorization: `Bearer ${tenant.api_key}`, accept: 'text/event-stream' },
    });
    expect(response.status).to.equal(405);
    expect(response.headers.get('allow')).to.equal('POST');
  });
});
