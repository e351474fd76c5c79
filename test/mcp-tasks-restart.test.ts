import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Task } from '@modelcontextprotocol/sdk/types.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import { ensureMaintenanceSchedules } from '../src/app/schedules';
import { as } from './helpers/http';
import { mcpClient } from './helpers/mcp';
import { pendingApproval } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';
import type { WeftProcess } from './helpers/weft-process';
import { startApiProcess } from './helpers/weft-process';

// Issue 42 item 1: an MCP task is a run, so it outlives the API process that created it. API
// processes of their own (`WEFT_PROCESS=api`) on the suite's Temporal server and task queue, whose
// worker (the suite's) runs the run; the first is SIGKILLed while the run awaits its approval.

describe('MCP tasks across an API restart (issue 42 item 1)', function () {
  this.timeout(180_000);
  let api: WeftProcess | undefined;
  const clients: Client[] = [];

  async function startApi(): Promise<WeftProcess> {
    const { config, runtime } = getStack();
    api = await startApiProcess({
      TEMPORAL_ADDRESS: config.TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE,
    });
    // The process writes the maintenance schedules unpaused; the suite keeps them paused.
    await ensureMaintenanceSchedules(runtime.temporal.client, config.TEMPORAL_TASK_QUEUE, { paused: true });
    return api;
  }

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close().catch(() => undefined);
    await api?.kill();
  });

  it('finds, awaits and completes a task after the API that created it was killed', async () => {
    const { api_key, user_jwt } = await newTenant();
    const first = await startApi();
    const before = await mcpClient(first.baseUrl, api_key);
    clients.push(before);
    let task: Task | undefined;
    for await (const message of before.experimental.tasks.callToolStream({
      name: 'runs_dispatch',
      arguments: {
        agent: 'playbook',
        input: { steps: [{ tool: 'billing.credits_balance', input: {}, requires_approval: true }] },
      },
    })) {
      if (message.type === 'error') {
        const exit = `exit ${first.child.exitCode} ${first.child.signalCode}`;
        throw new Error(`no task: ${message.error.message} (${exit})\n${first.output()}`);
      }
      if (message.type !== 'taskCreated') throw new Error(`expected a task, got ${message.type}`);
      task = message.task;
      break;
    }
    const { taskId } = task!;
    const approval = await pendingApproval(as(api_key), taskId);
    await first.kill();

    const second = await startApi();
    const after = await mcpClient(second.baseUrl, api_key);
    clients.push(after);
    const read = await after.experimental.tasks.getTask(taskId);
    expect(read).to.include({ taskId, status: 'input_required' });
    expect(read.statusMessage).to.contain(approval.approval_id);

    const resolved = await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    expect(resolved.status, resolved.text).to.equal(200);
    const result = await after.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.structuredContent).to.include({ execution_id: taskId, status: 'SUCCEEDED' });
    expect((await after.experimental.tasks.getTask(taskId)).status).to.equal('completed');
  });
});
