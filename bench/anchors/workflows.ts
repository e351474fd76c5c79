// Anchor workflows for bench/prompt.ts: the floor any Temporal-backed request stands on.
import { proxyActivities } from '@temporalio/workflow';
import type { anchorActivities } from './activities';

const { noop } = proxyActivities<typeof anchorActivities>({ startToCloseTimeout: '10s' });

export async function emptyAnchorWorkflow(): Promise<string> {
  return 'ok';
}

export async function threeActivitiesAnchorWorkflow(): Promise<string> {
  await noop();
  await noop();
  return noop();
}
