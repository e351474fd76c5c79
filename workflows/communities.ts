import { continueAsNew, log, patched, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CommunityPassResult, CommunityRefreshInput } from '../src/communities/workflow';
import type { WorkspaceSweepInput, WorkspaceSweepResult } from '../src/platform/temporal/sweeps';
import { communitySummaryActivity, maintenanceActivity } from './activity-options';

const { refreshCommunitiesBatch, refreshWorkspaceCommunities } = proxyActivities<Activities>(maintenanceActivity);
const { summariseCommunities } = proxyActivities<Activities>(communitySummaryActivity);

/** The model's summaries after a pass; their failure never undoes the pass (the communities keep their summary). */
async function summariseAfterPass(workspaceId: string) {
  try {
    return await summariseCommunities({ workspaceId });
  } catch (error) {
    log.warn('community summaries failed; the communities keep their summaries until the next pass', {
      workspaceId,
      error: error instanceof Error ? error.message : String(error),
    });
    return undefined;
  }
}

// The `community-model-summaries` marker's retirement is planned in docs/workflow-versions.md.
const BATCH = 20;
// Enough batches per run to keep the history small; the rest continues as a new run.
const BATCHES_PER_RUN = 200;

/** The `community-refresh` schedule: each workspace whose graph changed enough gets a new pass. */
export async function communityRefreshWorkflow(input: WorkspaceSweepInput): Promise<WorkspaceSweepResult> {
  const size = input.batchSize ?? BATCH;
  let after = input.after ?? null;
  let workspaces = 0;
  let failed = input.failed ?? 0;
  for (let i = 0; i < BATCHES_PER_RUN; i++) {
    const result = await refreshCommunitiesBatch({ after, size });
    if (patched('community-model-summaries')) {
      for (const workspaceId of result.summarise ?? []) await summariseAfterPass(workspaceId);
    }
    workspaces += result.processed;
    failed += result.failed;
    if (result.processed < size || result.last === null) return { workspaces, failed };
    after = result.last;
  }
  return continueAsNew<typeof communityRefreshWorkflow>({ after, batchSize: size, failed });
}

/** One workspace's pass, on demand. */
export async function communityWorkspaceRefreshWorkflow(input: CommunityRefreshInput): Promise<CommunityPassResult> {
  const pass = await refreshWorkspaceCommunities(input);
  if (!patched('community-model-summaries') || !pass.summaries_pending) return pass;
  const summaries = await summariseAfterPass(input.workspaceId);
  return summaries ? { ...pass, summaries } : pass;
}
