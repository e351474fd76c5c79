import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { mcpClient, startRunTask } from './helpers/mcp';
import { finished, pendingApproval } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

// Issue 42 item 1: MCP tasks (protocol 2025-11-25) through the SDK's own client: a task is a run.

const open: Client[] = [];

async function connectMcp(token: string): Promise<Client> {
  const client = await mcpClient(getStack().baseUrl, token);
  open.push(client);
  return client;
}

const oneStep = { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance', input: {} }] } };
const approvalStep = {
  agent: 'playbook',
  input: { steps: [{ tool: 'billing.credits_balance', input: {}, requires_approval: true }] },
};

const refusal = async (promise: Promise<unknown>): Promise<McpError> => {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, 'expected a refusal').to.be.instanceOf(McpError);
  return error as McpError;
};

describe('MCP tasks: a tool call answered with a durable run (issue 42 item 1)', () => {
  afterEach(async () => {
    for (const client of open.splice(0)) await client.close().catch(() => undefined);
  });

  it('declares task support, starts a run as a task, polls it to completed and reads the result', async () => {
    const { api_key } = await newTenant();
    const client = await connectMcp(api_key);
    expect(client.getServerCapabilities()?.tasks).to.deep.include({ list: {}, cancel: {} });
    expect(client.getServerCapabilities()?.tasks?.requests?.tools?.call).to.deep.equal({});
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(byName.get('runs_dispatch')?.execution).to.deep.equal({ taskSupport: 'optional' });
    expect(byName.get('ontology_remember')?.execution).to.deep.equal({ taskSupport: 'optional' });
    expect(byName.get('runs_get')?.execution).to.equal(undefined);

    const seen: string[] = [];
    let taskId = '';
    let result: any;
    for await (const message of client.experimental.tasks.callToolStream({
      name: 'runs_dispatch',
      arguments: oneStep,
    })) {
      if (message.type === 'taskCreated') taskId = message.task.taskId;
      if (message.type === 'taskCreated' || message.type === 'taskStatus') seen.push(message.task.status);
      if (message.type === 'result') result = message.result;
      if (message.type === 'error') throw message.error;
    }
    expect(seen[0]).to.equal('working');
    expect(seen.at(-1)).to.equal('completed');
    expect(result.structuredContent).to.include({ execution_id: taskId, status: 'SUCCEEDED' });
    expect(result._meta['io.modelcontextprotocol/related-task']).to.deep.equal({ taskId });
    const told = JSON.parse(result.content[0].text);
    expect(told.output).to.have.property('balance');

    // The task is the run REST shows, under the same id.
    const run = await finished(as(api_key), taskId);
    expect(run.status).to.equal('SUCCEEDED');
    const task = await client.experimental.tasks.getTask(taskId);
    expect(task).to.include({ taskId, status: 'completed', ttl: null });
    expect(task.createdAt).to.equal(run.created_at);
  });

  it('shows a run awaiting approval as input_required naming the approval, then completed once resolved', async () => {
    const { api_key, user_jwt } = await newTenant();
    const client = await connectMcp(api_key);
    const statuses: string[] = [];
    let result: any;
    let approvalId = '';
    for await (const message of client.experimental.tasks.callToolStream(
      { name: 'runs_dispatch', arguments: approvalStep },
      CallToolResultSchema,
    )) {
      if (message.type === 'taskStatus' || message.type === 'taskCreated') {
        statuses.push(message.task.status);
        if (message.task.status === 'input_required') {
          approvalId = (await pendingApproval(as(api_key), message.task.taskId)).approval_id;
          expect(message.task.statusMessage).to.contain(`Awaiting approval ${approvalId}`);
          expect(message.task.statusMessage).to.contain('billing.credits_balance');
          // A person resolves it through REST; the stream's tasks/result then waits for the run's end.
          const resolved = await as(user_jwt).post(`/v1/approvals/${approvalId}/resolve`, { decision: 'APPROVED' });
          expect(resolved.status, resolved.text).to.equal(200);
        }
      }
      if (message.type === 'result') result = message.result;
      if (message.type === 'error') throw message.error;
    }
    expect(approvalId).to.not.equal('');
    expect(statuses).to.include('input_required');
    expect(result.structuredContent).to.include({ status: 'SUCCEEDED' });
    const task = await client.experimental.tasks.getTask(result.structuredContent.execution_id);
    expect(task.status).to.equal('completed');
  });

  it('shows a run at a waitpoint as input_required naming it; completing it completes the task', async () => {
    const { api_key } = await newTenant(10);
    const client = await connectMcp(api_key);
    const waitFor = {
      tool: 'run.wait_for',
      input: { name: 'invoice approved', timeout_seconds: 3600, output_schema: { type: 'object' } },
    };
    const task = await startRunTask(client, { agent: 'playbook', input: { steps: [waitFor] } });
    const waiting = await eventually(
      async () => {
        const read = await client.experimental.tasks.getTask(task.taskId);
        return read.status === 'input_required' && read;
      },
      { what: 'the task to need input', timeoutMs: 30_000 },
    );
    const [waitpoint] = (await as(api_key).get(`/v1/waitpoints?execution_id=${task.taskId}`)).body.waitpoints;
    expect(waiting.statusMessage).to.contain(`event waitpoint ${waitpoint.waitpoint_id} "invoice approved"`);
    expect(waiting.statusMessage).to.contain(`POST /v1/waitpoints/${waitpoint.waitpoint_id}/complete`);
    const completed = await as(api_key).post(`/v1/waitpoints/${waitpoint.waitpoint_id}/complete`, {
      output: { ok: true },
    });
    expect(completed.status, completed.text).to.equal(200);
    // tasks/result holds the request until the run has finished.
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).to.include({ execution_id: task.taskId, status: 'SUCCEEDED' });
  });

  it('cancels a task (the run is CANCELLED), lists tasks, and refuses a second cancel', async () => {
    const { api_key } = await newTenant();
    const client = await connectMcp(api_key);
    const waiting = await startRunTask(client, approvalStep);
    const done = await startRunTask(client, oneStep);
    await pendingApproval(as(api_key), waiting.taskId);

    const cancelled = await client.experimental.tasks.cancelTask(waiting.taskId);
    expect(cancelled).to.include({ taskId: waiting.taskId, status: 'cancelled' });
    expect((await as(api_key).get(`/v1/runs/${waiting.taskId}`)).body.status).to.equal('CANCELLED');
    const again = await refusal(client.experimental.tasks.cancelTask(waiting.taskId));
    expect(again.message).to.contain('terminal status');
    const result = await client.experimental.tasks.getTaskResult(waiting.taskId, CallToolResultSchema);
    expect(result.isError).to.equal(true);

    await finished(as(api_key), done.taskId);
    const { tasks } = await client.experimental.tasks.listTasks();
    const listed = new Map(tasks.map((task) => [task.taskId, task.status]));
    expect(listed.get(waiting.taskId)).to.equal('cancelled');
    expect(listed.get(done.taskId)).to.equal('completed');
  });

  it('refuses another workspace’s task id to every task method, and lists none of its tasks', async () => {
    const victim = await newTenant();
    const victimClient = await connectMcp(victim.api_key);
    const task = await startRunTask(victimClient, approvalStep);
    await pendingApproval(as(victim.api_key), task.taskId);

    const attacker = await connectMcp((await newTenant()).api_key);
    const tasks = attacker.experimental.tasks;
    for (const attempt of [
      () => tasks.getTask(task.taskId),
      () => tasks.getTaskResult(task.taskId, CallToolResultSchema),
      () => tasks.cancelTask(task.taskId),
    ]) {
      const error = await refusal(attempt());
      expect(error.message).to.match(/not found/i);
      expect(JSON.stringify(error)).to.not.contain('AWAITING');
    }
    expect((await tasks.listTasks()).tasks.map((row) => row.taskId)).to.not.include(task.taskId);
    // Nothing happened to it.
    expect((await as(victim.api_key).get(`/v1/runs/${task.taskId}`)).body.status).to.equal('AWAITING_APPROVAL');
    await victimClient.experimental.tasks.cancelTask(task.taskId);
  });

  it('answers a task for a tool without task support with an error, and a refused dispatch as an error', async () => {
    const { api_key } = await newTenant();
    const client = await connectMcp(api_key);
    const plain = client.experimental.tasks.callToolStream(
      { name: 'runs_get', arguments: { execution_id: '7a1c2b9e-4d3f-4b8a-9c6e-2f1d0e9b8a7c' } },
      CallToolResultSchema,
      { task: {} },
    );
    const messages = [];
    for await (const message of plain) messages.push(message);
    expect(messages).to.have.length(1);
    expect(messages[0]!.type).to.equal('error');
    expect((messages[0] as any).error.message).to.contain('does not support tasks');

    const bad = client.experimental.tasks.callToolStream({
      name: 'runs_dispatch',
      arguments: { agent: 'playbook', input: { steps: [{ tool: 'no.such_tool', input: {} }] } },
    });
    const [refused] = await (async () => {
      const seen = [];
      for await (const message of bad) seen.push(message);
      return seen;
    })();
    expect(refused!.type).to.equal('error');
    expect((refused as any).error.data.status).to.equal(422);
  });

  it('keeps a task across fresh MCP clients: nothing of it lives in a connection', async () => {
    const { api_key } = await newTenant();
    const first = await connectMcp(api_key);
    const task = await startRunTask(first, oneStep);
    await first.close();
    const second = await connectMcp(api_key);
    const status = await eventually(
      async () => {
        const read = await second.experimental.tasks.getTask(task.taskId);
        return read.status === 'completed' && read;
      },
      { what: 'the task to complete', timeoutMs: 30_000 },
    );
    expect(status.taskId).to.equal(task.taskId);
  });
});
