import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { mcpClient, startRunTask } from './helpers/mcp';
import { finished, pendingApproval } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newMember, newTenant } from './helpers/tenants';

// Issue 42's "answer": an MCP client answers an input_required task through MCP itself, with the
// approvals_resolve and waitpoints_complete tools, under the REST routes' rules.

const open: Client[] = [];

async function connectMcp(token: string): Promise<Client> {
  const client = await mcpClient(getStack().baseUrl, token);
  open.push(client);
  return client;
}

const approvalStep = {
  agent: 'playbook',
  input: { steps: [{ tool: 'billing.credits_balance', input: {}, requires_approval: true }] },
};

const inputRequired = (client: Client, taskId: string) =>
  eventually(
    async () => {
      const read = await client.experimental.tasks.getTask(taskId);
      return read.status === 'input_required' && read;
    },
    { what: 'the task to need input', timeoutMs: 30_000 },
  );

const call = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }) as Promise<CallToolResult>;

/** A refused call's `{status, detail}`, as `/v1/cap` would answer it. */
const refusedWith = (result: CallToolResult) => {
  expect(result.isError, JSON.stringify(result)).to.equal(true);
  return JSON.parse((result.content[0] as { text: string }).text) as { status: number; detail: any };
};

describe('MCP: answering an input_required task through MCP (issue 42)', () => {
  afterEach(async () => {
    for (const client of open.splice(0)) await client.close().catch(() => undefined);
  });

  it('a second person approves with approvals_resolve over /mcp; tasks/result gives the completed result', async () => {
    const tenant = await newTenant(10);
    const reviewer = await newMember(tenant.workspace_id);
    const agent = await connectMcp(tenant.api_key);
    const task = await startRunTask(agent, approvalStep);
    const waiting = await inputRequired(agent, task.taskId);
    const approval = await pendingApproval(as(tenant.api_key), task.taskId);
    expect(waiting.statusMessage).to.contain(`approval ${approval.approval_id}`);
    expect(waiting.statusMessage).to.contain('call approvals_resolve');

    const person = await connectMcp(reviewer.api_key);
    const { tools } = await person.listTools();
    expect(tools.map((tool) => tool.name)).to.include.members(['approvals_list', 'approvals_resolve']);
    const listed = await call(person, 'approvals_list', { execution_id: task.taskId, status: 'pending' });
    expect((listed.structuredContent as any).approvals.map((row: any) => row.approval_id)).to.deep.equal([
      approval.approval_id,
    ]);
    const resolved = await call(person, 'approvals_resolve', {
      approval_id: approval.approval_id,
      decision: 'approve',
      comment: 'checked over MCP',
    });
    expect(resolved.isError, JSON.stringify(resolved)).to.not.equal(true);
    expect(resolved.structuredContent).to.include({ decision: 'APPROVED', status: 'approved' });

    const result = await agent.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).to.include({ execution_id: task.taskId, status: 'SUCCEEDED' });
    expect((await agent.experimental.tasks.getTask(task.taskId)).status).to.equal('completed');
    const row = (await as(tenant.api_key).get(`/v1/approvals/${approval.approval_id}`)).body;
    expect(row).to.include({ resolved_by: reviewer.user_id, notes: 'checked over MCP' });
  });

  it('never lets an MCP token, the dispatcher, its user’s other credential or a run step approve', async () => {
    const tenant = await newTenant(10);
    const colleague = await newMember(tenant.workspace_id);
    const dispatcher = await connectMcp(tenant.api_key);
    const task = await startRunTask(dispatcher, approvalStep);
    const approval = await pendingApproval(as(tenant.api_key), task.taskId);
    const approve = { approval_id: approval.approval_id, decision: 'approve' };

    // An MCP token (an agent's credential) is not offered the tool, and is refused it.
    const minted = await as(colleague.user_jwt).post('/v1/mcp/token', { workspace_id: tenant.workspace_id });
    expect(minted.status, minted.text).to.equal(201);
    const agentToken = await connectMcp(minted.body.token);
    expect((await agentToken.listTools()).tools.map((tool) => tool.name)).to.not.include('approvals_resolve');
    expect(refusedWith(await call(agentToken, 'approvals_resolve', approve))).to.deep.equal({
      status: 403,
      detail: 'Missing scope approvals:write',
    });
    // The credential that dispatched the run, and its user through another credential while another
    // member is there (the default policy, when_alone).
    const own = refusedWith(await call(dispatcher, 'approvals_resolve', approve));
    expect(own.status).to.equal(403);
    expect(own.detail).to.include({ error: 'approval_by_dispatcher' });
    const sameUser = refusedWith(await call(await connectMcp(tenant.user_jwt), 'approvals_resolve', approve));
    expect(sameUser.status).to.equal(403);
    expect(sameUser.detail).to.include({ error: 'approval_by_dispatching_user' });
    // A run's step, even dispatched by the colleague who may approve it by hand.
    const stepRun = await as(colleague.api_key).post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'approvals.resolve', input: approve }] },
    });
    expect(stepRun.status, stepRun.text).to.equal(202);
    const failed = await finished(as(colleague.api_key), stepRun.body.execution_id);
    expect(failed.status).to.equal('FAILED');
    expect(failed.error.code).to.equal('forbidden');
    expect(failed.error.message).to.contain('approval_by_run_step');

    // Another workspace's approval id is not found, and nothing was decided by any of these.
    const stranger = await connectMcp((await newTenant()).api_key);
    expect(refusedWith(await call(stranger, 'approvals_resolve', approve)).status).to.equal(404);
    expect(refusedWith(await call(stranger, 'approvals_list', { execution_id: task.taskId })).status).to.equal(404);
    expect((await dispatcher.experimental.tasks.getTask(task.taskId)).status).to.equal('input_required');
    expect((await as(tenant.api_key).get(`/v1/approvals/${approval.approval_id}`)).body.status).to.equal('pending');

    // The colleague's reject ends the task as failed.
    const rejected = await call(await connectMcp(colleague.api_key), 'approvals_resolve', {
      ...approve,
      decision: 'reject',
    });
    expect(rejected.structuredContent).to.include({ decision: 'REJECTED' });
    const result = await dispatcher.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).to.equal(true);
    expect((await dispatcher.experimental.tasks.getTask(task.taskId)).status).to.equal('failed');
  });

  it('completes a waitpoint with waitpoints_complete; a bad output is a 422, another workspace’s a 404', async () => {
    const tenant = await newTenant();
    const client = await connectMcp(tenant.api_key);
    const waitFor = {
      tool: 'run.wait_for',
      input: { name: 'invoice approved', timeout_seconds: 3600, output_schema: { type: 'object' } },
    };
    const task = await startRunTask(client, { agent: 'playbook', input: { steps: [waitFor] } });
    const waiting = await inputRequired(client, task.taskId);
    const [waitpoint] = (await as(tenant.api_key).get(`/v1/waitpoints?execution_id=${task.taskId}`)).body.waitpoints;
    expect(waiting.statusMessage).to.contain(`event waitpoint ${waitpoint.waitpoint_id}`);
    expect(waiting.statusMessage).to.contain('call waitpoints_complete');

    const stranger = await connectMcp((await newTenant()).api_key);
    const foreign = { waitpoint_id: waitpoint.waitpoint_id, output: { ok: true } };
    expect(refusedWith(await call(stranger, 'waitpoints_complete', foreign)).status).to.equal(404);
    const bad = refusedWith(await call(client, 'waitpoints_complete', { ...foreign, output: 'not an object' }));
    expect(bad.status).to.equal(422);

    const done = await call(client, 'waitpoints_complete', foreign);
    expect(done.isError, JSON.stringify(done)).to.not.equal(true);
    expect(done.structuredContent).to.include({ waitpoint_id: waitpoint.waitpoint_id, status: 'completed' });
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).to.include({ execution_id: task.taskId, status: 'SUCCEEDED' });
    expect(refusedWith(await call(client, 'waitpoints_complete', foreign)).status).to.equal(409);
  });
});
