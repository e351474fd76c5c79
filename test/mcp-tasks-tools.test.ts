import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expect } from 'chai';
import { as } from './helpers/http';
import { mcpClient } from './helpers/mcp';
import { startMcpRemote } from './helpers/remote-tools';
import type { Stack } from './helpers/stack';
import { bootStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

// Issue 42 item 1: a connector's tool called as an MCP task is a one-step run calling that tool; the
// task's result is the tool's own answer. A stack that allows loopback connectors (as connectors.test.ts).

describe('MCP tasks: a connector tool as a task (issue 42 item 1)', function () {
  this.timeout(120_000);
  let variant: { stack: Stack; stop: () => Promise<void> };
  let remote: Awaited<ReturnType<typeof startMcpRemote>>;
  let client: Client | undefined;

  before(async () => {
    variant = await bootStack({ CONNECTOR_ALLOWED_CIDRS: '127.0.0.1/32' });
    remote = await startMcpRemote();
  });
  after(async () => {
    await client?.close().catch(() => undefined);
    await remote?.stop();
    await variant?.stop();
  });

  it('runs tracker_lookup_issue as a task: a tagged one-step run whose result is the tool’s answer', async () => {
    const tenant = await newTenant(20);
    const api = as(tenant.api_key, variant.stack.baseUrl);
    const created = await api.post('/v1/connectors', { name: 'tracker', kind: 'mcp', url: remote.url });
    expect(created.status, created.text).to.equal(201);
    client = await mcpClient(variant.stack.baseUrl, tenant.api_key);
    const listed = (await client.listTools()).tools.find((tool) => tool.name === 'tracker_lookup_issue');
    expect(listed?.execution).to.deep.equal({ taskSupport: 'optional' });

    let taskId = '';
    let result: any;
    for await (const message of client.experimental.tasks.callToolStream({
      name: 'tracker_lookup_issue',
      arguments: { id: 4 },
    })) {
      if (message.type === 'taskCreated') taskId = message.task.taskId;
      if (message.type === 'result') result = message.result;
      if (message.type === 'error') throw message.error;
    }
    expect(result.structuredContent).to.deep.include({ id: 4, title: 'Issue 4' });
    const run = (await api.get(`/v1/runs/${taskId}`)).body;
    expect(run).to.deep.include({ status: 'SUCCEEDED', tags: ['mcp-task'] });
    expect(run.steps.map((step: any) => step.tool)).to.deep.equal(['tracker.lookup_issue']);
  });
});
