import { defineWorkflow } from '../platform/temporal/contract';
import type { WorkspaceSweepInput, WorkspaceSweepResult } from '../platform/temporal/sweeps';

export interface CommunityRefreshInput {
  workspaceId: string;
  /** Recompute even when the graph has not changed enough since the last pass. */
  force: boolean;
}

export interface CommunityPassResult {
  workspace_id: string;
  refreshed: boolean;
  /** first_pass, forced, changed (past the threshold) or unchanged (skipped). */
  reason: 'first_pass' | 'forced' | 'changed' | 'unchanged';
  /** Nodes and edges added or deleted since the last pass, and how many it takes to run again. */
  changes: number | null;
  threshold: number | null;
  nodes: number;
  edges: number;
  communities: number;
  modularity: number;
  computed_at: string;
  duration_ms: number;
}

/** The `community-refresh` schedule: every workspace whose graph changed enough since its last pass. */
export const communityRefreshWorkflow = defineWorkflow<[WorkspaceSweepInput], WorkspaceSweepResult>({
  type: 'communityRefreshWorkflow',
  id: () => 'community-refresh',
});

/** One workspace's pass, on demand (POST /v1/ontology/communities/refresh waits for it). */
export const communityWorkspaceRefreshWorkflow = defineWorkflow<[CommunityRefreshInput], CommunityPassResult>({
  type: 'communityWorkspaceRefreshWorkflow',
  id: (input) => `community-refresh-${input.workspaceId}`,
  workspaceId: (input) => input.workspaceId,
  summary: (input) => `Community detection${input.force ? ' (forced)' : ''}`,
  executionTimeout: '15 minutes',
});
