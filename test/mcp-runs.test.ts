import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import { as } from './helpers/http';
import { pendingApproval } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

const open: Client[] = [];

async function connect(token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${getStack().baseUrl}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'weft-test', version: '1.0.0' });
  open.push(client);
  await client.connect(transport);
  return client;
}

const call = async (client: Client, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) })) as CallToolResult;

describe('MCP: runs as tools (runs_dispatch, runs_get, runs_cancel)', () => {
  afterEach(async () => {
    for (const client of open.splice(0)) await client.close().catch(() => undefined);
  });

  it('an MCP token dispatches, reads and cancels a run; a repeated key replays; annotations fit', async () => {
    const { user_jwt, workspace_id, api_key } = await newTenant();
    const token = (await as(user_jwt).post(`/v1/workspaces/${workspace_id}/mcp-tokens`, { name: 'agent' })).body.token;
    const client = await connect(token);
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(byName.get('runs_get')?.annotations).to.include({ readOnlyHint: true });
    expect(byName.get('runs_dispatch')?.annotations).to.include({ readOnlyHint: false, destructiveHint: false });
    expect(byName.get('runs_cancel')?.annotations).to.include({ destructiveHint: true, idempotentHint: true });
    expect(byName.get('runs_dispatch')?.inputSchema.type).to.equal('object');

    const body = {
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance', input: {}, requires_approval: true }] },
    };
    const meta = { 'weft/idempotencyKey': 'mcp-dispatch-1' };
    const dispatched = await call(client, 'runs_dispatch', body, meta);
    expect(dispatched.isError, JSON.stringify(dispatched)).to.not.equal(true);
    const id = (dispatched.structuredContent as any).execution_id;
    const again = await call(client, 'runs_dispatch', body, meta);
    expect(again._meta?.['weft/replayed']).to.equal(true);
    expect((again.structuredContent as any).execution_id).to.equal(id);

    await pendingApproval(as(api_key), id);
    const got = await call(client, 'runs_get', { execution_id: id });
    expect(got.structuredContent).to.include({
      execution_id: id,
      status: 'AWAITING_APPROVAL',
      parent_execution_id: null,
    });

    const cancelled = await call(client, 'runs_cancel', { execution_id: id });
    expect(cancelled.structuredContent).to.include({ execution_id: id, status: 'CANCELLED' });

    const stranger = await connect((await newTenant()).api_key);
    const refused = await call(stranger, 'runs_get', { execution_id: id });
    expect(refused.isError).to.equal(true);
    expect((refused._meta as any)['weft/error'].status).to.equal(404);
  });

  it('lists runs_dispatch only to a credential holding runs:write as well as capabilities:write', async () => {
    const { user_jwt } = await newTenant();
    const narrow = (
      await as(user_jwt).post('/v1/auth/me/api-keys', {
        name: 'cap-only',
        scopes: ['capabilities:read', 'capabilities:write'],
      })
    ).body.token;
    const client = await connect(narrow);
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).to.include('billing_credits_balance');
    expect(names).to.not.include.members(['runs_dispatch', 'runs_get', 'runs_cancel']);
    const refused = await call(client, 'runs_dispatch', { agent: 'playbook', input: { steps: [{ tool: 'x' }] } });
    expect((refused._meta as any)['weft/error'].status).to.equal(403);
  });
});
