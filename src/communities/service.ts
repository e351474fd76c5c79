import type { CreditService } from '../credits/service';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { DeadlineExceededError, RateLimitedError } from '../platform/errors';
import { UpstreamError } from '../platform/llm/errors';
import type { TemporalHandle } from '../platform/temporal/connection';
import { LIMITS } from '../rules/limits';
import { detectCommunities, matchPrevious } from './detect';
import {
  changesSince,
  claimForcedRefresh,
  listCommunities,
  lockPass,
  pendingSummaries,
  readGraph,
  readStored,
  recordPass,
  topMembersOf,
  transactionNow,
  writeCommunities,
  writeSummary,
} from './repository';
import type { CommunityListResponse, CommunityRefreshResponse } from './schemas';
import type { CommunitySummariser } from './summary-model';
import type { CommunityPassResult, CommunitySummaryResult } from './workflow';
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
export function createCommunityService(deps: {
  uow: UnitOfWork;
  temporal: TemporalHandle;
  /** Charges forced passes (review NL-6). */
  credits: Pick<CreditService, 'chargeFor'>;
  /** The hosted model that writes summaries; null for the local model (the extract stands). */
  summariser: CommunitySummariser | null;
}) {
  const { uow, temporal, summariser, credits } = deps;

  async function refreshWorkspace(workspaceId: string, options: { force: boolean }): Promise<CommunityPassResult> {
    const started = Date.now();
    return uow({ workspaceId }, async (m) => {
      const last = await lockPass(m, workspaceId);
      const now = await transactionNow(m);
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
      const written = await writeCommunities(m, {
        workspaceId,
        detected: detection.communities,
        keep: matchPrevious(detection.communities, stored),
        stored,
        topMembers: L.topMembers,
        computedAt,
        summaries: summariser ? 'model' : 'extract',
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
        summaries_pending: written.pending,
      };
    });
  }

  /**
   * Asks the hosted model for the summary of each community left `pending` by a pass (at most
   * LIMITS.communities.summariesPerPass, most important first), from its most important members.
   * Each model call runs outside any transaction; its answer is written in its own short one. A
   * model failure (UpstreamError, after the client's own retries) does not fail the step: the
   * community keeps the summary it shows (its previous model summary or the extract), marked
   * `summary_status: "failed"` with `summary_error`, and is asked again at its next pass. Anything
   * else (the database) throws, for the activity's retry policy; communities already written are
   * no longer pending, so a retry resumes.
   */
  async function summarisePending(
    workspaceId: string,
    options: { heartbeat?: (progress: unknown) => void } = {},
  ): Promise<CommunitySummaryResult> {
    const result: CommunitySummaryResult = { summarised: 0, failed: 0, left: 0 };
    if (!summariser) return result;
    const pending = await uow({ workspaceId }, (m) => pendingSummaries(m, workspaceId, L.summariesPerPass + 1));
    result.left = Math.max(0, pending.length - L.summariesPerPass);
    for (const community of pending.slice(0, L.summariesPerPass)) {
      const computedAt = String(community.properties.computed_at ?? '');
      const members = await uow({ workspaceId }, (m) => topMembersOf(m, workspaceId, community.id, L.summaryMembers));
      let fields: Parameters<typeof writeSummary>[4];
      try {
        const summary = await summariser.summarise({
          name: community.name,
          size: Number(community.properties.size ?? members.length),
          member_types: (community.properties.member_types ?? []) as { type: string; count: number }[],
          members,
        });
        fields = {
          summary,
          summary_source: 'model',
          summary_status: 'current',
          summary_model: summariser.model,
          summarised_at: new Date().toISOString(),
        };
        result.summarised++;
      } catch (error) {
        if (!(error instanceof UpstreamError)) throw error;
        fields = { summary_status: 'failed', summary_error: `model ${error.reason}` };
        result.failed++;
      }
      await uow({ workspaceId }, (m) => writeSummary(m, workspaceId, community.id, computedAt, fields));
      options.heartbeat?.(result);
    }
    return result;
  }

  async function list(principal: Principal, limit: number): Promise<CommunityListResponse> {
    const rows = await uow(scopeOf(principal), (m) => listCommunities(m, principal.workspaceId, limit));
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      importance_score: row.importance_score,
      size: Number(row.properties.size ?? 0),
      summary: String(row.properties.summary ?? ''),
      summary_source: row.properties.summary_source === 'model' ? ('model' as const) : ('extract' as const),
      summary_status:
        row.properties.summary_status === 'pending' || row.properties.summary_status === 'failed'
          ? row.properties.summary_status
          : ('current' as const),
      summary_error: typeof row.properties.summary_error === 'string' ? row.properties.summary_error : null,
      top_members: (row.properties.top_members ?? []) as CommunityListResponse[number]['top_members'],
      computed_at: String(row.properties.computed_at ?? ''),
    }));
  }

  return {
    refreshWorkspace,
    summarisePending,
    list,

    /**
     * POST /v1/ontology/communities/refresh: runs the workspace's pass as its workflow and answers
     * with its result and the communities (504 after LIMITS.communities.refreshWaitMs; the pass goes on).
     * A pass already running is waited on rather than doubled.
     */
    async refresh(principal: Principal, body: { force: boolean }): Promise<CommunityRefreshResponse> {
      const run = async () => {
        const input = { workspaceId: principal.workspaceId, force: body.force };
        const handle = await temporal.workflows.start(communityWorkspaceRefreshWorkflow, input);
        return temporal.workflows.resultWithin(
          handle,
          L.refreshWaitMs,
          () => new DeadlineExceededError(`Community detection is still running (${handle.workflowId})`),
        );
      };
      if (!body.force) return { pass: await run(), communities: await list(principal, L.listDefault) };
      // Review NL-6: a forced pass is charged (refunded when it fails) and claims the workspace's
      // cooldown in the charge's own transaction; within the cooldown it is 429 and nothing is charged.
      const pass = await credits.chargeFor(
        principal,
        'ontology.communities.refresh_forced',
        async (charge) => {
          try {
            return await run();
          } catch (error) {
            // A 504: the pass goes on and will most likely finish, so its charge stands.
            if (error instanceof DeadlineExceededError) await uow(scopeOf(principal), (m) => charge.confirm(m));
            throw error;
          }
        },
        {
          prepare: async (m) => {
            const refused = await claimForcedRefresh(m, principal.workspaceId, L.forcedCooldownSeconds);
            if (refused) {
              throw new RateLimitedError(
                refused.retryAfterSeconds,
                `A forced refresh runs at most once every ${L.forcedCooldownSeconds} s per workspace; ` +
                  `retry in ${refused.retryAfterSeconds} s, or refresh without force`,
              );
            }
          },
        },
      );
      return { pass, communities: await list(principal, L.listDefault) };
    },
  };
}

export type CommunityService = ReturnType<typeof createCommunityService>;
