import { heartbeat, log } from '@temporalio/activity';
import type { DataSource } from 'typeorm';
import type { CommunityService } from '../src/communities/service';
import type { CommunityRefreshInput, CommunitySummaryInput } from '../src/communities/workflow';
import { forEachWorkspace } from '../src/platform/workspace-sweep';
import { workspaceIdsAfter } from '../src/tenancy/repository';
import { heartbeating } from './failures';
import type { WorkspaceBatch, WorkspaceBatchResult } from './graph';

export interface CommunityBatchResult extends WorkspaceBatchResult {
  /** Workspaces whose pass left communities for the hosted model to summarise. */
  summarise?: string[];
}

/** Thin adapters over the community service (src/communities/service.ts). */
export function createCommunityActivities(deps: { dataSource: DataSource; communities: CommunityService }) {
  return {
    /** The schedule's step: a batch of workspaces, each recomputed only when its graph changed enough. */
    refreshCommunitiesBatch: async (batch: WorkspaceBatch): Promise<CommunityBatchResult> => {
      const summarise: string[] = [];
      const swept = await forEachWorkspace(
        {
          job: 'community refresh',
          page: (after) => workspaceIdsAfter(deps.dataSource, after, batch.size),
          after: batch.after,
          onePageOnly: true,
          heartbeat: (progress) => heartbeat(progress),
          heartbeatEveryMs: 10_000,
          warn: (fields, message) => log.warn(message, fields),
        },
        async (workspaceId) => {
          const pass = await deps.communities.refreshWorkspace(workspaceId, { force: false });
          if ((pass.summaries_pending ?? 0) > 0) summarise.push(workspaceId);
        },
      );
      return { processed: swept.visited, failed: swept.failed, last: swept.last, summarise };
    },
    /** The on-demand pass of one workspace. */
    refreshWorkspaceCommunities: (input: CommunityRefreshInput) =>
      deps.communities.refreshWorkspace(input.workspaceId, { force: input.force }),
    /**
     * The hosted model's summaries of the communities a pass left pending: one model call per
     * community, heartbeating throughout (a worker lost mid-call is noticed within the heartbeat
     * timeout, and the retry resumes with the communities still pending).
     */
    summariseCommunities: (input: CommunitySummaryInput) =>
      heartbeating(() =>
        deps.communities.summarisePending(input.workspaceId, { heartbeat: (progress) => heartbeat(progress) }),
      ),
  };
}
