import { z } from 'zod';
import { LIMITS } from '../rules/limits';
import { AsOf } from './schemas';

const workspace_id = z.uuid().optional();
const bounded = (range: { min: number; max: number; default: number }) =>
  z.coerce.number().int().min(range.min).max(range.max).default(range.default);

export const GraphOverviewQuery = z.object({
  workspace_id,
  max_supernodes: bounded(LIMITS.overview.maxSupernodes),
  group_by: z.enum(['type', 'type_path', 'community']).default('type_path'),
});
export type GraphOverviewQuery = z.infer<typeof GraphOverviewQuery>;

export const GraphStatsQuery = z.object({ workspace_id, top_hubs_limit: bounded(LIMITS.stats.topHubs) });
export type GraphStatsQuery = z.infer<typeof GraphStatsQuery>;

export const NeighborhoodQuery = z
  .object({
    workspace_id,
    q: z.string().trim().min(1).max(LIMITS.queryLength).optional(),
    node_id: z.uuid().optional(),
    hops: bounded(LIMITS.neighborhood.hops),
    node_limit: bounded(LIMITS.neighborhood.nodeLimit),
    edge_limit: bounded(LIMITS.neighborhood.edgeLimit),
    as_of: AsOf.optional(),
  })
  .superRefine((query, ctx) => {
    if ((query.q === undefined) === (query.node_id === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['node_id'], message: 'Give exactly one of q and node_id' });
    }
  });
export type NeighborhoodQuery = z.infer<typeof NeighborhoodQuery>;

export const FamilyTreeQuery = z.object({
  workspace_id,
  node_id: z.uuid(),
  degrees: bounded(LIMITS.familyTree.degrees),
  node_limit: bounded(LIMITS.familyTree.nodeLimit),
  edge_limit: bounded(LIMITS.familyTree.edgeLimit),
  as_of: AsOf.optional(),
});
export type FamilyTreeQuery = z.infer<typeof FamilyTreeQuery>;

/** The compact node of a traversal: enough to draw and label it; GET the node for the rest. */
export const GraphNode = z
  .object({
    id: z.uuid(),
    type: z.string(),
    name: z.string(),
    importance_score: z.number(),
    reference_count: z.number().int(),
    connection_id: z.uuid().nullable(),
    depth: z.number().int().describe('Hops from the centre; 0 for the centre.'),
  })
  .meta({ id: 'GraphNode' });

export const GraphEdge = z
  .object({ id: z.uuid(), type: z.string(), source_node_id: z.uuid(), target_node_id: z.uuid() })
  .meta({ id: 'GraphEdge' });

export const GraphNeighborhoodResponse = z
  .object({
    center_node_id: z.uuid().nullable().describe('null when q matched no node.'),
    depth_limit: z.number().int().describe('hops (neighborhood) or degrees (family_tree).'),
    nodes: z.array(GraphNode),
    edges: z.array(GraphEdge),
    candidates: z.array(GraphNode.omit({ depth: true })).describe('With q: up to 10 name matches, best first.'),
    truncated: z.object({ nodes: z.boolean(), edges: z.boolean() }),
  })
  .meta({ id: 'GraphNeighborhoodResponse' });
export type GraphNeighborhoodResponse = z.input<typeof GraphNeighborhoodResponse>;

export const GraphOverviewRecord = z
  .object({
    group_by: z.enum(['type', 'type_path', 'community']),
    total_nodes: z.number().int(),
    total_edges: z.number().int(),
    clusters: z.array(
      z.object({
        id: z
          .string()
          .describe(
            'type, or type/path segment, or (group_by=community) the community node’s id, "_none" for nodes in ' +
              'no community; "_other" holds what did not fit.',
          ),
        type: z.string().nullable(),
        path: z.string().nullable(),
        name: z.string().nullable().optional().describe('group_by=community: the community’s name.'),
        node_count: z.number().int(),
      }),
    ),
    edges: z.array(z.object({ source: z.string(), target: z.string(), edge_count: z.number().int() })),
    truncated: z.boolean().describe('true when clusters were folded into "_other".'),
  })
  .meta({ id: 'GraphOverviewRecord' });
export type GraphOverviewRecord = z.input<typeof GraphOverviewRecord>;

const count = z.number().int();
export const GraphStatsRecord = z
  .object({
    totals: z.object({ nodes: count, edges: count, node_types: count, edge_types: count }),
    nodes_by_type: z.array(z.object({ type: z.string(), count })),
    edges_by_type: z.array(z.object({ type: z.string(), count })),
    by_connection: z.array(
      z.object({
        connection_id: z.string().describe('A connection id, or "_manual" for nodes made without one.'),
        nodes: count,
        edges: count,
      }),
    ),
    top_hubs: z.array(
      z.object({
        id: z.uuid(),
        type: z.string(),
        name: z.string(),
        degree: count,
        in_degree: count,
        out_degree: count,
      }),
    ),
    degree_distribution: z.array(z.object({ min_degree: count, max_degree: count, nodes: count })),
    connectivity: z.object({
      components: count
        .nullable()
        .describe('Weakly connected components, isolated nodes included; null above the exact-computation bound.'),
      largest_component: count.nullable(),
      isolated_nodes: count,
      exact: z
        .boolean()
        .describe('false when the graph has more live edges than the bound for computing components per request.'),
      computed_at: z.iso
        .datetime({ offset: true })
        .nullable()
        .describe(
          'When components and largest_component were computed: they are reused for up to a minute while the ' +
            'live node and edge totals stay the same. null when they were not computed (exact is false).',
        ),
      age_seconds: z
        .number()
        .min(0)
        .nullable()
        .describe('Seconds since computed_at, when this response was made; null with computed_at.'),
    }),
    density: z.number().describe('edges / (nodes * (nodes - 1)), directed.'),
  })
  .meta({ id: 'GraphStatsRecord' });
export type GraphStatsRecord = z.input<typeof GraphStatsRecord>;
