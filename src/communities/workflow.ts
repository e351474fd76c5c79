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
  /** Communities the pass left for the hosted model to summarise (always 0 with the local model). */
  summaries_pending?: number;
  /** What the summary step did after the pass (absent when nothing was pending). */
  summaries?: CommunitySummaryResult;
}

/** The summary step: communities summarised by the model, failed (they keep their summary), left for later. */
export interface CommunitySummaryResult {
  summarised: number;
  failed: number;
  left: number;
}

export interface CommunitySummaryInput {
  workspaceId: string;
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
