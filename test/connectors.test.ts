import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'chai';
import { as } from './helpers/http';
import { startHttpRemote, startMcpRemote } from './helpers/remote-tools';
import { scheduleGone } from './helpers/run-schedules';
import { finished, pendingApproval, succeeded } from './helpers/runs';
import type { Stack } from './helpers/stack';
import { bootStack, getStack } from './helpers/stack';
import { creditBalance, newMember, newTenant } from './helpers/tenants';

// Issue 41: connectors, against real loopback servers (an MCP server built with the official SDK,
// an HTTP API served by Koa). This stack allows 127.0.0.1/32 for connectors; the suite's main
// stack allows nothing private, which the refused-address test uses.

type Api = ReturnType<typeof as>;

describe('connectors (issue 41)', function () {
  this.timeout(120_000);
  let variant: { stack: Stack; stop: () => Promise<void> };
  let mcp: Awaited<ReturnType<typeof startMcpRemote>>;
  let items: Awaited<ReturnType<typeof startHttpRemote>>;
  let tenant: Awaited<ReturnType<typeof newTenant>>;
  let api: Api;

  before(async () => {
    variant = await bootStack({ CONNECTOR_ALLOWED_CIDRS: '127.0.0.1/32' });
    // Answers as server-sent events (the SDK server's default); the llm test's server answers JSON.
    mcp = await startMcpRemote({ sse: true });
    items = await startHttpRemote();
    tenant = await newTenant(100);
    api = as(tenant.api_key, variant.stack.baseUrl);
  });
  after(async () => {
    await mcp?.stop();
    await items?.stop();
    await variant?.stop();
  });

  const createTracker = async (client: Api, name: string, extra: Record<string, unknown> = {}) => {
    const created = await client.post('/v1/connectors', {
      name,
      kind: 'mcp',
      url: mcp.url,
      auth: { type: 'bearer', token: 'tracker-secret-AAAA' },
      ...extra,
    });
    expect(created.status, created.text).to.equal(201);
    return created.body;
  };

  const cap = (client: Api, name: string, input: unknown, key?: string) =>
    client.post(`/v1/cap/${name}`, input, key ? { 'Idempotency-Key': key } : undefined);

  it('discovers an MCP server’s tools as <name>.<tool>, and never answers its secret', async () => {
    const connector = await createTracker(api, 'tracker');
    const byName = Object.fromEntries(connector.tools.map((tool: any) => [tool.name, tool]));
    expect(Object.keys(byName).sort()).to.deep.equal([
      'tracker.big',
      'tracker.broken',
      'tracker.create_issue',
      'tracker.lookup_issue',
      'tracker.slow',
    ]);
    expect(byName['tracker.lookup_issue'].read_only).to.equal(true);
    expect(byName['tracker.create_issue'].read_only).to.equal(false);
    expect(byName['tracker.lookup_issue'].input_schema.properties).to.have.property('id');
    expect(connector.auth).to.include({ type: 'bearer', last4: 'AAAA' });
    expect(connector.auth.fingerprint).to.match(/^[0-9a-f]{12}$/);
    for (const read of [await api.get(`/v1/connectors/${connector.id}`), await api.get('/v1/connectors')]) {
      expect(read.status, read.text).to.equal(200);
      expect(read.text).to.not.include('tracker-secret');
    }
    expect(mcp.authorizations.at(-1)).to.equal('Bearer tracker-secret-AAAA');
  });

  it('refuses reserved and taken names (409), bad names and documents, and servers it cannot list (422)', async () => {
    const reserved = await api.post('/v1/connectors', { name: 'ontology', kind: 'mcp', url: mcp.url });
    expect(reserved.status).to.equal(409);
    expect(reserved.body.detail.error).to.equal('name_reserved');
    const taken = await api.post('/v1/connectors', { name: 'tracker', kind: 'mcp', url: mcp.url });
    expect(taken.status).to.equal(409);
    expect(taken.body.detail.error).to.equal('name_taken');
    expect((await api.post('/v1/connectors', { name: 'Bad-Name', kind: 'mcp', url: mcp.url })).status).to.equal(422);
    const notOpenApi = await api.post('/v1/connectors', {
      name: 'docs',
      kind: 'http',
      openapi: { swagger: '2.0' },
      base_url: items.baseUrl,
    });
    expect(notOpenApi.status).to.equal(422);
    expect(notOpenApi.text).to.include('OpenAPI 3.0 or 3.1');
    // Nothing listens on the port the HTTP API answered on before it was stopped: use a closed one.
    const closed = await startMcpRemote();
    await closed.stop();
    const unreachable = await api.post('/v1/connectors', { name: 'gone', kind: 'mcp', url: closed.url });
    expect(unreachable.status, unreachable.text).to.equal(422);
    expect(unreachable.body.detail[0].type).to.equal('unreachable');
    const names = (await api.get('/v1/connectors')).body.connectors.map((row: any) => row.name);
    expect(names).to.deep.equal(['tracker']);
  });

  it('shows the tools to their workspace only: GET /v1/cap, POST /v1/cap and MCP', async () => {
    const listed = (await api.get('/v1/cap')).body.tools.map((tool: any) => tool.name);
    expect(listed).to.include.members(['tracker.lookup_issue', 'tracker.create_issue']);
    const other = await newTenant(10);
    const stranger = as(other.api_key, variant.stack.baseUrl);
    expect((await stranger.get('/v1/cap')).body.tools.map((tool: any) => tool.name)).to.not.include(
      'tracker.lookup_issue',
    );
    expect((await cap(stranger, 'tracker.lookup_issue', { id: 1 })).status).to.equal(404);
    const connectorId = (await api.get('/v1/connectors')).body.connectors[0].id;
    expect((await stranger.get(`/v1/connectors/${connectorId}`)).status).to.equal(404);

    const mcpTools = async (token: string) => {
      const client = new Client({ name: 'test', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${variant.stack.baseUrl}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      try {
        const names = (await client.listTools()).tools.map((tool) => tool.name);
        const called = names.includes('tracker_lookup_issue')
          ? await client.callTool({ name: 'tracker_lookup_issue', arguments: { id: 7 } })
          : null;
        return { names, called };
      } finally {
        await client.close();
      }
    };
    const own = await mcpTools(tenant.api_key);
    expect(own.names).to.include('tracker_lookup_issue');
    expect(own.called?.structuredContent).to.deep.equal({ id: 7, title: 'Issue 7' });
    expect((await mcpTools(other.api_key)).names).to.not.include('tracker_lookup_issue');
  });

  it('calls a read tool for 1 credit, and a write tool once per Idempotency-Key with the key sent on', async () => {
    const before = await creditBalance(tenant.tenant_id);
    const read = await cap(api, 'tracker.lookup_issue', { id: 3 });
    expect(read.status, read.text).to.equal(200);
    expect(read.body).to.include({ credits_charged: 1 });
    expect(read.body.result).to.deep.equal({ id: 3, title: 'Issue 3' });
    expect(await creditBalance(tenant.tenant_id)).to.equal(before - 1);
    expect((await cap(api, 'tracker.lookup_issue', { id: 'three' })).status).to.equal(422);

    const writesBefore = mcp.writes.length;
    const first = await cap(api, 'tracker.create_issue', { title: 'hello' }, 'file-once-1');
    expect(first.status, first.text).to.equal(200);
    const again = await cap(api, 'tracker.create_issue', { title: 'hello' }, 'file-once-1');
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body.result).to.deep.equal(first.body.result);
    expect(mcp.writes.slice(writesBefore)).to.deep.equal([{ title: 'hello', key: 'file-once-1' }]);
  });

  it('fails a remote error, a timeout and an oversized answer with 502 and refunds the charge', async () => {
    const before = await creditBalance(tenant.tenant_id);
    const broken = await cap(api, 'tracker.broken', {});
    expect(broken.status).to.equal(502);
    expect(broken.body.detail).to.include({ error: 'remote_error' });
    expect(broken.body.detail.message).to.include('on fire');

    const connectorId = (await api.get('/v1/connectors')).body.connectors[0].id;
    const tightened = await api.patch(`/v1/connectors/${connectorId}`, {
      timeout_seconds: 1,
      max_response_bytes: 4096,
    });
    expect(tightened.status, tightened.text).to.equal(200);
    const slow = await cap(api, 'tracker.slow', {});
    expect(slow.status).to.equal(502);
    expect(slow.body.detail.error).to.equal('timeout');
    const big = await cap(api, 'tracker.big', { bytes: 20_000 });
    expect(big.status).to.equal(502);
    expect(big.body.detail.error).to.equal('response_too_large');
    expect((await cap(api, 'tracker.big', { bytes: 100 })).status).to.equal(200);
    expect(await creditBalance(tenant.tenant_id)).to.equal(before - 1);
    await api.patch(`/v1/connectors/${connectorId}`, { timeout_seconds: 30, max_response_bytes: 1048576 });
    // Each call is observed by connector and outcome, never by its input.
    const metrics = await (await fetch(`${variant.stack.baseUrl}/metrics`)).text();
    for (const outcome of ['ok', 'remote_error', 'timeout', 'response_too_large']) {
      expect(metrics).to.match(
        new RegExp(`weft_connector_call_duration_seconds_count\\{connector="tracker",outcome="${outcome}"\\} [1-9]`),
      );
    }
  });

  it('runs a playbook step of a read tool, and asks a person before a write tool, which runs once', async () => {
    const read = await api.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'tracker.lookup_issue', input: { id: 9 } }] },
    });
    expect(read.status, read.text).to.equal(202);
    const done = await succeeded(api, read.body.execution_id);
    expect(done.steps[0].output).to.deep.equal({ id: 9, title: 'Issue 9' });

    const writesBefore = mcp.writes.length;
    const write = await api.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'tracker.create_issue', input: { title: 'from a run' } }] },
    });
    expect(write.status, write.text).to.equal(202);
    const id = write.body.execution_id;
    const approval = await pendingApproval(api, id);
    expect(mcp.writes.length, 'nothing is written before the approval').to.equal(writesBefore);
    const reviewer = as((await newMember(tenant.workspace_id)).api_key, variant.stack.baseUrl);
    // The reviewer's edit is checked against the remote tool's own schema, then runs as edited.
    const badEdit = await reviewer.post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'APPROVED',
      input: { title: 7 },
    });
    expect(badEdit.status, badEdit.text).to.equal(422);
    const resolved = await reviewer.post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'APPROVED',
      input: { title: 'from a run, edited' },
    });
    expect(resolved.status, resolved.text).to.equal(200);
    await succeeded(api, id);
    expect(mcp.writes.slice(writesBefore)).to.deep.equal([{ title: 'from a run, edited', key: `${id}:0` }]);

    // A rerun of it is checked against the workspace's tools too, and waits for a person again.
    const rerun = await api.post(`/v1/runs/${id}/rerun`, { from_step: 0 });
    expect(rerun.status, rerun.text).to.equal(202);
    await pendingApproval(api, rerun.body.execution_id);
    await api.post(`/v1/runs/${rerun.body.execution_id}/cancel`, {});
  });

  it('lets a run schedule’s template name a connector tool; another workspace’s is an unknown tool', async () => {
    const template = {
      agent: 'playbook',
      input: { steps: [{ tool: 'tracker.lookup_issue', input: { id: 1 } }] },
    };
    const created = await api.post('/v1/run-schedules', { cron: '0 3 1 1 *', run: template });
    expect(created.status, created.text).to.equal(201);
    const stranger = as((await newTenant(1)).api_key, variant.stack.baseUrl);
    const refused = await stranger.post('/v1/run-schedules', { cron: '0 3 1 1 *', run: template });
    expect(refused.status).to.equal(422);
    expect(refused.body.detail[0].type).to.equal('unknown_tool');
    expect((await api.delete(`/v1/run-schedules/${created.body.id}`)).status).to.be.oneOf([200, 204]);
    await scheduleGone(created.body.id);
  });

  it('fails a run step whose answer is larger than the connector’s cap, with the reason', async () => {
    const run = await api.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'tracker.big', input: { bytes: 2_000_000 } }] },
    });
    expect(run.status, run.text).to.equal(202);
    const ended = await finished(api, run.body.execution_id);
    expect(ended.status).to.equal('FAILED');
    expect(ended.steps[0].error.message).to.include('response_too_large');
  });

  it('calls an OpenAPI-described HTTP API: parameters and a JSON body, with Idempotency-Key', async () => {
    const created = await api.post('/v1/connectors', { name: 'items', kind: 'http', openapi: items.openapi });
    expect(created.status, created.text).to.equal(201);
    const tools = Object.fromEntries(created.body.tools.map((tool: any) => [tool.name, tool]));
    expect(tools['items.get_item'].read_only).to.equal(true);
    expect(tools['items.create_item'].read_only).to.equal(false);
    expect(tools['items.create_item'].input_schema.required).to.deep.equal(['body']);
    const got = await cap(api, 'items.get_item', { id: 'a b', verbose: 'yes' });
    expect(got.status, got.text).to.equal(200);
    expect(got.body.result).to.deep.equal({ status: 200, body: { id: 'a b', verbose: 'yes' } });
    const made = await cap(api, 'items.create_item', { body: { name: 'widget' } }, 'make-widget-1');
    expect(made.status, made.text).to.equal(200);
    expect(made.body.result.status).to.equal(201);
    expect(items.created).to.deep.equal([{ name: 'widget', key: 'make-widget-1' }]);
    expect((await cap(api, 'items.create_item', {})).status).to.equal(422);

    const run = await api.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'items.get_item', input: { id: '42' } }] },
    });
    expect(run.status, run.text).to.equal(202);
    const done = await succeeded(api, run.body.execution_id);
    expect(done.steps[0].output).to.deep.equal({ status: 200, body: { id: '42', verbose: null } });
  });

  it('rotates the secret (the next call carries the new one) and forgets a deleted connector’s tools', async () => {
    const connector = await createTracker(api, 'rotating');
    const rotated = await api.patch(`/v1/connectors/${connector.id}`, {
      auth: { type: 'header', name: 'X-Api-Key', value: 'second-secret-BBBB' },
    });
    expect(rotated.status, rotated.text).to.equal(200);
    expect(rotated.body.auth).to.include({ type: 'header', header_name: 'X-Api-Key', last4: 'BBBB' });
    expect(rotated.text).to.not.include('second-secret');
    const called = await cap(api, 'rotating.lookup_issue', { id: 1 });
    expect(called.status, called.text).to.equal(200);
    expect(mcp.authorizations.at(-1)).to.equal('second-secret-BBBB');

    expect((await api.delete(`/v1/connectors/${connector.id}`)).status).to.equal(204);
    expect((await cap(api, 'rotating.lookup_issue', { id: 1 })).status).to.equal(404);
    expect((await api.get('/v1/cap')).body.tools.map((tool: any) => tool.name)).to.not.include('rotating.lookup_issue');
    expect((await api.get(`/v1/connectors/${connector.id}`)).status).to.equal(404);
  });

  it('fails a waiting run’s step connector_removed once its connector is deleted', async () => {
    const connector = await createTracker(api, 'doomed');
    const run = await api.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'doomed.create_issue', input: { title: 'never' } }] },
    });
    expect(run.status, run.text).to.equal(202);
    const approval = await pendingApproval(api, run.body.execution_id);
    expect((await api.delete(`/v1/connectors/${connector.id}`)).status).to.equal(204);
    const writesBefore = mcp.writes.length;
    const reviewer = as((await newMember(tenant.workspace_id)).api_key, variant.stack.baseUrl);
    await reviewer.post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    const ended = await finished(api, run.body.execution_id);
    expect(ended.status).to.equal('FAILED');
    expect(ended.steps[0].error.message).to.include('connector_removed');
    expect(mcp.writes.length).to.equal(writesBefore);
  });

  it('refuses a loopback server where the allowance is off (the suite’s main stack)', async () => {
    const main = as(tenant.api_key, getStack().baseUrl);
    const refused = await main.post('/v1/connectors', { name: 'local', kind: 'mcp', url: mcp.url });
    expect(refused.status, refused.text).to.equal(422);
    expect(refused.body.detail[0].type).to.equal('address_refused');
    const metadata = await api.post('/v1/connectors', { name: 'meta', kind: 'mcp', url: 'http://169.254.169.254/mcp' });
    expect(metadata.status).to.equal(422);
    expect(metadata.body.detail[0].type).to.equal('address_refused');
  });
});
