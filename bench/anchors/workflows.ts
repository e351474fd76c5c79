// Anchor workflows for bench/prompt.ts and bench/runs.ts: the floor any Temporal-backed request stands on.
import { proxyActivities } from '@temporalio/workflow';
import type { anchorActivities, floorActivities } from './activities';

const { noop } = proxyActivities<typeof anchorActivities>({ startToCloseTimeout: '10s' });
const { floorStep } = proxyActivities<ReturnType<typeof floorActivities>>({ startToCloseTimeout: '10s' });

export async function emptyAnchorWorkflow(): Promise<string> {
  return 'ok';
}

export async function threeActivitiesAnchorWorkflow(): Promise<string> {
  await noop();
  await noop();
  return noop();
}

/** The shape of a 3-step run (begin, three steps, finish) without its database work. */
export async function fiveActivitiesAnchorWorkflow(): Promise<string> {
  for (let i = 0; i < 4; i++) await noop();
  return noop();
}

/** The hand-written durable run (bench/anchors/floor-api.ts): its steps in sequence, one activity each. */
export async function floorRunWorkflow(run: { runId: string; tenantId: string; steps: number }): Promise<string> {
  for (let index = 0; index < run.steps; index++) {
    await floorStep({ runId: run.runId, tenantId: run.tenantId, index, last: index === run.steps - 1 });
  }
  return 'SUCCEEDED';
}
