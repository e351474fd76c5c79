import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { queryRows } from '../platform/db/query';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { DeadlineExceededError } from '../platform/errors';
import type { TemporalHandle } from '../platform/temporal/connection';
import { LIMITS } from '../rules/limits';
import { detectCommunities, matchPrevious } from './detect';
import {
  changesSince,
  listCommunities,
  lockPass,
  readGraph,
  readStored,
  recordPass,
  writeCommunities,
} from './repository';
import type { CommunityListResponse, CommunityRefreshResponse } from './schemas';
import type { CommunityPassResult } from './workflow';
import { communityWorkspaceRefreshWorkflow } from './workflow';

const L = LIMITS.communities;

/** How many nodes and edges must have been added or deleted since a pass of this size for the next. */
export const changeThreshold = (last: { node_count: number; edge_count: number }) =>
  Math.max(L.minChanges, Math.ceil(L.changeShare * (last.node_count + last.edge_count)));

/**
 * Communities (issue 30 part 3; docs/behaviour.md "Communities"). A pass reads the workspace's
 * graph, runs Louvain (detect.ts) and stores the result as `community` nodes with MEMBER_OF edges,
 * in one transaction under the workspace's RLS scope, serialised per workspace by an advisory lock.
 * Passes run from the `community-refresh` schedule (only where the graph changed enough) and on
 * demand (the route starts the workspace's workflow and waits for it).
 */
export function createCommunityService(deps: { uow: UnitOfWork; temporal: TemporalHandle }) {
  const { uow, temporal } = deps;

  async function refreshWorkspace(workspaceId: string, options: { force: boolean }): Promise<CommunityPassResult> {
    const started = Date.now();
    return uow({ workspaceId }, async (m) => {
      const last = await lockPass(m, workspaceId);
      const [{ now }] = (await queryRows<{ now: Date }>(m, `SELECT now() AS now`)) as [{ now: Date }];
      let changes: number | null = null;
      let threshold: number | null = null;
      if (last) {
        changes = await changesSince(m, workspaceId, last.computed_at);
        threshold = changeThreshold(last);
        if (!options.force && changes < threshold) {
          return {
            workspace_id: workspaceId,
            refreshed: false,
            reason: 'unchanged',
            changes,
            threshold,
            nodes: last.node_count,
            edges: last.edge_count,
            communities: last.community_count,
            modularity: last.modularity,
            computed_at: new Date(last.computed_at).toISOString(),
            duration_ms: Date.now() - started,
          };
        }
      }
      const graph = await readGraph(m, workspaceId, L.maxNodes);
      const detection = detectCommunities(graph.nodes, graph.links, { minSize: L.minSize });
      const stored = await readStored(m, workspaceId);
      const computedAt = now.toISOString();
      await writeCommunities(m, {
        workspaceId,
        detected: detection.communities,
        keep: matchPrevious(detection.communities, stored),
        stored,
        topMembers: L.topMembers,
        computedAt,
      });
      const pass = {
        computed_at: now,
        node_count: graph.nodes.length,
        edge_count: graph.edgeCount,
        community_count: detection.communities.length,
        modularity: detection.modularity,
      };
      await recordPass(m, workspaceId, pass);
      return {
        workspace_id: workspaceId,
        refreshed: true,
        reason: !last ? 'first_pass' : options.force ? 'forced' : 'changed',
        changes,
        threshold,
        nodes: pass.node_count,
        edges: pass.edge_count,
        communities: pass.community_count,
        modularity: pass.modularity,
        computed_at: computedAt,
        duration_ms: Date.now() - started,
      };
    });
  }

  async function list(principal: Principal, limit: number): Promise<CommunityListResponse> {
    const rows = await uow(scopeOf(principal), (m) => listCommunities(m, principal.workspaceId, limit));
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      importance_score: row.importance_score,
      size: Number(row.properties.size ?? 0),
      summary: String(row.properties.summary ?? ''),
      top_members: (row.properties.top_members ?? []) as CommunityListResponse[number]['top_members'],
      computed_at: String(row.properties.computed_at ?? ''),
    }));
  }

  return {
    refreshWorkspace,
    list,

    /**
     * POST /v1/ontology/communities/refresh: runs the workspace's pass as its workflow and answers
     * with its result and the communities (504 after LIMITS.communities.refreshWaitMs; the pass goes on).
     * A pass already running is waited on rather than doubled.
     */
    async refresh(principal: Principal, body: { force: boolean }): Promise<CommunityRefreshResponse> {
      const input = { workspaceId: principal.workspaceId, force: body.force };
      const handle = await temporal.workflows.start(communityWorkspaceRefreshWorkflow, input);
      const pass = await temporal.workflows.resultWithin(
        handle,
        L.refreshWaitMs,
        () => new DeadlineExceededError(`Community detection is still running (${handle.workflowId})`),
      );
      return { pass, communities: await list(principal, L.listDefault) };
    },
  };
}

export type CommunityService = ReturnType<typeof createCommunityService>;
