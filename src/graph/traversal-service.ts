import type { EntityManager } from 'typeorm';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { ScopedRead, UnitOfWork } from '../platform/db/unit-of-work';
import { NotFoundError } from '../platform/errors';
import { LIMITS } from '../rules/limits';
import { createComponentsCache } from './components-cache';
import type { SubgraphRow } from './traversal-repository';
import {
  computeComponents,
  matchCompactNodes,
  readOverview,
  readStats,
  readSubgraph,
  readSubgraphNow,
} from './traversal-repository';
import type {
  FamilyTreeQuery,
  GraphNeighborhoodResponse,
  GraphOverviewQuery,
  GraphOverviewRecord,
  GraphStatsQuery,
  GraphStatsRecord,
  NeighborhoodQuery,
} from './traversal-schemas';
import { refuseBeforeHorizon } from './versions-service';

type CompactNode = GraphNeighborhoodResponse['candidates'][number];

/** Overview, stats, neighborhood and family tree: all computed in Postgres, in the caller's workspace. */
export function createTraversalService(deps: { uow: UnitOfWork; read: ScopedRead; retentionDays: number }) {
  const { uow, read, retentionDays } = deps;
  const componentsCache = createComponentsCache({
    ttlMs: LIMITS.stats.componentsTtlSeconds * 1000,
    maxEntries: LIMITS.stats.componentsCacheEntries,
  });

  /** The neighbourhood's answer from the subgraph's row; an empty one means the centre is not there (404). */
  function answer(
    { nodes, edges }: SubgraphRow,
    centre: string,
    depth: number,
    nodeLimit: number,
    edgeLimit: number,
    candidates: CompactNode[],
  ): GraphNeighborhoodResponse {
    if (nodes.length === 0) throw new NotFoundError('Node not found');
    return {
      center_node_id: centre,
      depth_limit: depth,
      nodes,
      edges: edges.slice(0, edgeLimit),
      candidates,
      truncated: { nodes: nodes.length >= nodeLimit, edges: edges.length > edgeLimit },
    };
  }

  async function subgraph(
    m: EntityManager,
    centre: string,
    depth: number,
    nodeLimit: number,
    edgeLimit: number,
    candidates: CompactNode[],
    asOf: string | undefined,
  ): Promise<GraphNeighborhoodResponse> {
    const row = await readSubgraph(m, [centre], depth, nodeLimit, edgeLimit, asOf);
    return answer(row, centre, depth, nodeLimit, edgeLimit, candidates);
  }

  /** Today's subgraph around a known node: one scoped statement, no transaction (the hot path). */
  async function subgraphNow(
    principal: Principal,
    centre: string,
    depth: number,
    nodeLimit: number,
    edgeLimit: number,
  ) {
    const row = await readSubgraphNow(read, scopeOf(principal), [centre], depth, nodeLimit, edgeLimit);
    return answer(row, centre, depth, nodeLimit, edgeLimit, []);
  }

  return {
    /** knowledge-graph-service-api.md §4.1: node_id xor q; with q the best name match is the centre. */
    /** With `as_of`, the subgraph as it stood then (issue 31); `q` still matches today's names. */
    neighborhood: (principal: Principal, query: NeighborhoodQuery) =>
      query.node_id !== undefined && query.as_of === undefined
        ? subgraphNow(principal, query.node_id, query.hops, query.node_limit, query.edge_limit)
        : uow(scopeOf(principal), async (m): Promise<GraphNeighborhoodResponse> => {
            if (query.as_of !== undefined) refuseBeforeHorizon(query.as_of, retentionDays, ['query', 'as_of']);
            if (query.node_id !== undefined) {
              return subgraph(m, query.node_id, query.hops, query.node_limit, query.edge_limit, [], query.as_of);
            }
            const candidates = await matchCompactNodes(m, query.q ?? '', LIMITS.neighborhood.candidates);
            const centre = candidates[0]?.id;
            if (!centre) {
              return {
                center_node_id: null,
                depth_limit: query.hops,
                nodes: [],
                edges: [],
                candidates,
                truncated: { nodes: false, edges: false },
              };
            }
            return subgraph(m, centre, query.hops, query.node_limit, query.edge_limit, candidates, query.as_of);
          }),

    familyTree: (principal: Principal, query: FamilyTreeQuery) =>
      query.as_of === undefined
        ? subgraphNow(principal, query.node_id, query.degrees, query.node_limit, query.edge_limit)
        : uow(scopeOf(principal), (m) => {
            if (query.as_of !== undefined) refuseBeforeHorizon(query.as_of, retentionDays, ['query', 'as_of']);
            return subgraph(m, query.node_id, query.degrees, query.node_limit, query.edge_limit, [], query.as_of);
          }),

    overview: (principal: Principal, query: GraphOverviewQuery) =>
      uow(scopeOf(principal), async (m): Promise<GraphOverviewRecord> => {
        const row = await readOverview(m, query.group_by, query.max_supernodes);
        return {
          group_by: query.group_by,
          total_nodes: row.total_nodes,
          total_edges: row.total_edges,
          clusters: row.clusters,
          edges: row.edges,
          truncated: row.folded,
        };
      }),

    stats: (principal: Principal, query: GraphStatsQuery) =>
      uow(scopeOf(principal), async (m): Promise<GraphStatsRecord> => {
        const { isolated, ...stats } = await readStats(m, query.top_hubs_limit);
        // Components need several passes over every edge (17 s at 1M edges here), so they are
        // computed only for graphs below the bound, and reused while the live totals stand still
        // (see components-cache.ts); the rest is always exact and current.
        const exact = stats.totals.edges <= LIMITS.stats.exactConnectivityMaxEdges;
        const fingerprint = `${stats.totals.nodes}:${stats.totals.edges}:${isolated}`;
        const cc = exact
          ? await componentsCache.get(principal.workspaceId, fingerprint, () => computeComponents(m))
          : undefined;
        // knowledge-graph-service-api.md §4.1: the synthetic _manual row is always present, even when empty.
        if (!stats.by_connection.some((entry) => entry.connection_id === '_manual')) {
          stats.by_connection.unshift({ connection_id: '_manual', nodes: 0, edges: 0 });
        }
        const nodes = stats.totals.nodes;
        return {
          ...stats,
          connectivity: {
            components: cc ? cc.components + isolated : null,
            largest_component: cc ? Math.max(cc.largest, nodes > 0 ? 1 : 0) : null,
            isolated_nodes: isolated,
            exact,
            computed_at: cc ? cc.computedAt.toISOString() : null,
            age_seconds: cc ? Math.max(0, Date.now() - cc.computedAt.getTime()) / 1000 : null,
          },
          density: nodes > 1 ? stats.totals.edges / (nodes * (nodes - 1)) : 0,
        };
      }),
  };
}

export type TraversalService = ReturnType<typeof createTraversalService>;
