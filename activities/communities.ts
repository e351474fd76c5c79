import { heartbeat, log } from '@temporalio/activity';
import type { DataSource } from 'typeorm';
import type { CommunityService } from '../src/communities/service';
import type { CommunityRefreshInput } from '../src/communities/workflow';
import { forEachWorkspace } from '../src/platform/workspace-sweep';
import { workspaceIdsAfter } from '../src/tenancy/repository';
import type { WorkspaceBatch, WorkspaceBatchResult } from './graph';

/** Thin adapters over the community service (src/communities/service.ts). */
export function createCommunityActivities(deps: { dataSource: DataSource; communities: CommunityService }) {
  return {
    /** The schedule's step: a batch of workspaces, each recomputed only when its graph changed enough. */
    refreshCommunitiesBatch: async (batch: WorkspaceBatch): Promise<WorkspaceBatchResult> => {
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
        (workspaceId) => deps.communities.refreshWorkspace(workspaceId, { force: false }),
      );
      return { processed: swept.visited, failed: swept.failed, last: swept.last };
    },
    /** The on-demand pass of one workspace. */
    refreshWorkspaceCommunities: (input: CommunityRefreshInput) =>
      deps.communities.refreshWorkspace(input.workspaceId, { force: input.force }),
  };
}
