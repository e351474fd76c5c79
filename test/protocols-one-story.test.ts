import { TaskState } from '@a2a-js/sdk';
import { EventSchemas } from '@ag-ui/core/schemas';
import { expect } from 'chai';
import { a2aClient } from './helpers/a2a';
import { as } from './helpers/http';
import { mcpClient } from './helpers/mcp';
import { pendingApproval, succeeded } from './helpers/runs';
import type { SseFrame } from './helpers/sse';
import { openSse } from './helpers/sse';
import { getStack } from './helpers/stack';
import { newMember, newTenant } from './helpers/tenants';

// Issue 42's rule: the same run seen through REST, SSE, MCP, A2A and AG-UI tells one story. One run
// with an approval is followed through all five doors, each with its own client, while it waits (a
// second person answers it through MCP, with approvals_resolve) and once it has finished; the two
// event streams are compared event by event.

/** What the AG-UI stream says for one run event (the last AG-UI event a run event becomes carries its id). */
const agUiFor = (type: string): string =>
  type === 'step.started'
    ? 'TOOL_CALL_END'
    : type === 'step.completed' || type === 'step.failed'
      ? 'STEP_FINISHED'
      : type === 'run.finished'
        ? 'RUN_FINISHED'
        : `CUSTOM:weft.${type.replace(/\./g, '_')}`;

const agUiName = (frame: SseFrame) =>
  frame.data.type === 'CUSTOM' ? `CUSTOM:${frame.data.name}` : (frame.data.type as string);

describe('one run, every door (issue 42): REST, SSE, MCP tasks, A2A and AG-UI', function () {
  this.timeout(120_000);

  it('tell the same story of a run that waits for a person, in the same order', async () => {
    const tenant = await newTenant(10);
    const reviewer = await newMember(tenant.workspace_id);
    const api = as(tenant.api_key);
    const dispatched = await api.post('/v1/runs', {
      agent: 'playbook',
      input: {
        steps: [{ tool: 'billing.credits_balance' }, { tool: 'billing.credits_balance', requires_approval: true }],
      },
    });
    expect(dispatched.status, dispatched.text).to.equal(202);
    const id: string = dispatched.body.execution_id;
    const sse = await openSse(`/v1/runs/${id}/events`, tenant.api_key);
    const agUi = await openSse(`/v1/runs/${id}/events?format=ag-ui`, tenant.api_key);
    const mcp = await mcpClient(getStack().baseUrl, tenant.api_key);
    const a2a = await a2aClient(tenant.api_key);
    const reviewerMcp = await mcpClient(getStack().baseUrl, reviewer.api_key);

    try {
      // While it waits: every door says so, and names the same approval where it names one.
      const approval = await pendingApproval(api, id);
      expect((await api.get(`/v1/runs/${id}`)).body.status).to.equal('AWAITING_APPROVAL');
      const requested = await sse.until((frame) => frame.event === 'approval.requested', 'the SSE approval');
      expect(requested.data.data).to.deep.include({ approval_id: approval.approval_id });
      const custom = await agUi.until(
        (frame) => frame.data.type === 'CUSTOM' && frame.data.name === 'weft.approval_requested',
        'the AG-UI approval',
      );
      expect(custom.data.value).to.deep.include({ approval_id: approval.approval_id });
      const waitingTask = await mcp.experimental.tasks.getTask(id);
      expect(waitingTask.status).to.equal('input_required');
      expect(waitingTask.statusMessage).to.contain(approval.approval_id);
      const waitingA2a = await a2a.getTask({ tenant: '', id, historyLength: undefined });
      expect(waitingA2a.status!.state).to.equal(TaskState.TASK_STATE_INPUT_REQUIRED);

      // A person answers through MCP too, as the task's status message says to.
      expect(waitingTask.statusMessage).to.contain('call approvals_resolve');
      const resolved = await reviewerMcp.callTool({
        name: 'approvals_resolve',
        arguments: { approval_id: approval.approval_id, decision: 'approve' },
      });
      expect(resolved.isError, JSON.stringify(resolved)).to.not.equal(true);

      // Once it has finished: the same outcome through every door.
      const run = await succeeded(api, id);
      const [sseFrames, agUiFrames] = await Promise.all([sse.ended(), agUi.ended()]);
      expect((await mcp.experimental.tasks.getTask(id)).status).to.equal('completed');
      const doneA2a = await a2a.getTask({ tenant: '', id, historyLength: undefined });
      expect(doneA2a.status!.state).to.equal(TaskState.TASK_STATE_COMPLETED);
      expect(agUiFrames.at(-1)!.data).to.deep.include({ type: 'RUN_FINISHED', runId: id, result: run.output });
      for (const frame of agUiFrames) EventSchemas.parse(frame.data);

      // The two streams in the same order: each run event, by its id, is what the AG-UI event of that id says.
      const sseStory = sseFrames.filter((frame) => frame.id).map((frame) => [frame.id, agUiFor(frame.event)]);
      const agUiStory = agUiFrames.filter((frame) => frame.id).map((frame) => [frame.id, agUiName(frame)]);
      expect(agUiStory).to.deep.equal(sseStory);
      expect(sseStory.map(([, type]) => type)).to.include.members([
        'CUSTOM:weft.approval_requested',
        'STEP_FINISHED',
        'RUN_FINISHED',
      ]);
    } finally {
      sse.close();
      agUi.close();
      await mcp.close();
      await reviewerMcp.close();
    }
  });
});
