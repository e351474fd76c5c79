import type { Client } from '@temporalio/client';
import { expect } from 'chai';
import { communityRefreshWorkflow } from '../../src/communities/workflow';
import { WorkflowStarter } from '../../src/platform/temporal/starter';
import { BACKLOG_COUNTED, backlogWeight } from '../../src/runs/fair-share';
import { priorityOf, RunFlow } from '../../src/runs/flow-schemas';
import { runWorkflow } from '../../src/runs/workflow';

// Issue 43 items 1 and 2: where a workflow waits in Temporal's task queue.
describe('queue priority and fairness keys (issue 43)', () => {
  const starter = new WorkflowStarter({} as Client, 'weft');

  it("starts a workspace's workflow under the workspace id as fairness key, never the run's priority", () => {
    // A priority key would put a workspace's priority-1 runs ahead of every other workspace's: flow.priority
    // orders runs within their workspace only, at Weft's own gate (src/runs/priority-gate.ts).
    const input = { workspaceId: 'ws-1', executionId: 'e-1', agent: 'playbook' as const, stepCount: 1, priority: 1 };
    expect(starter.options(runWorkflow, [input]).priority).to.deep.equal({ fairnessKey: 'ws-1' });
    const { priority: _, ...unprioritised } = input;
    expect(starter.options(runWorkflow, [unprioritised]).priority).to.deep.equal({ fairnessKey: 'ws-1' });
  });

  it("weighs a run down by its workspace's backlog, so a flood yields to workspaces with little waiting", () => {
    const input = { workspaceId: 'ws-1', executionId: 'e-1', agent: 'playbook' as const, stepCount: 1, weight: 0.25 };
    expect(starter.options(runWorkflow, [input]).priority).to.deep.equal({ fairnessKey: 'ws-1', fairnessWeight: 0.25 });
    // Up to 16 runs waiting: Temporal's default weight; beyond, 16 ÷ waiting, never below 0.05.
    expect([0, 16].map(backlogWeight)).to.deep.equal([undefined, undefined]);
    expect([32, 160, 400, 10_000].map(backlogWeight)).to.deep.equal([0.5, 0.1, 0.05, 0.05]);
    const falling = [17, 20, 50, 100, 200, 320].map((waiting) => backlogWeight(waiting)!);
    expect(falling).to.deep.equal([...falling].sort((a, b) => b - a));
    // A dispatch counts the backlog only as far as it changes the weight.
    expect(BACKLOG_COUNTED).to.equal(320);
    expect(backlogWeight(BACKLOG_COUNTED)).to.equal(backlogWeight(1_000_000));
  });

  it('leaves system-wide jobs without a fairness key', () => {
    expect(starter.options(communityRefreshWorkflow, [{}]).priority).to.equal(undefined);
  });

  it('takes priorities 1 to 5, default 3, and nothing else', () => {
    expect(priorityOf(undefined)).to.equal(3);
    expect(priorityOf(RunFlow.parse({}))).to.equal(3);
    expect(priorityOf(RunFlow.parse({ priority: 1 }))).to.equal(1);
    for (const priority of [0, 6, 2.5, '1', null]) expect(RunFlow.safeParse({ priority }).success).to.equal(false);
    expect(RunFlow.safeParse({ priority: 2, weight: 1 }).success).to.equal(false);
  });
});
