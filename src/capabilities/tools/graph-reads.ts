import { z } from 'zod';
import { SymbolContextRequest, SymbolContextResponse } from '../../code/schemas';
import type { CodeService } from '../../code/service';
import type { NodeService } from '../../graph/node-service';
import { AsOf, NodeResponse, NodeTypeFilter } from '../../graph/schemas';
import { GraphNeighborhoodResponse } from '../../graph/traversal-schemas';
import type { TraversalService } from '../../graph/traversal-service';
import { NodeHistoryResponse } from '../../graph/versions-schemas';
import type { VersionService } from '../../graph/versions-service';
import { refuseBeforeHorizon } from '../../graph/versions-service';
import { LIMITS } from '../../rules/limits';
import { defineCapability } from '../define';

/** How many edges `ontology.get_node` shows each way; `truncated` says when there were more. */
export const GET_NODE_EDGES = 50;

const nodeId = z.uuid().describe('A node of the workspace (another workspace’s is 404).');
const asOf = AsOf.optional();
const bounded = (range: { min: number; max: number; default: number }, what: string) =>
  z
    .number()
    .int()
    .min(range.min)
    .max(range.max)
    .optional()
    .describe(`${what}: ${range.min} to ${range.max} (default ${range.default}).`);

/** An edge of `ontology.get_node`, with the node at its other end (itself, for a loop). */
const NodeEdge = z.object({
  id: z.uuid(),
  type: z.string(),
  source_node_id: z.uuid(),
  target_node_id: z.uuid(),
  other: z.object({ id: z.uuid(), type: z.string(), name: z.string() }).describe('The node at the other end.'),
});

/** `as_of` too old is the 422 of the field the caller sent (the graph's services name a query's). */
const refuseOldAsOf = (versions: Pick<VersionService, 'retentionDays'>, at: string | undefined) => {
  if (at !== undefined) refuseBeforeHorizon(at, versions.retentionDays, ['body', 'as_of']);
};

/**
 * The graph's reads as tools (issue 40): each answers what its REST route answers, through the same
 * services, and is free like it, but `ontology.symbol_context` (priced as its route, in src/rules/costs.ts).
 */
export const graphReadCapabilities = (deps: {
  nodes: Pick<NodeService, 'getWithEdges' | 'typeahead'>;
  traversals: Pick<TraversalService, 'neighborhood'>;
  versions: Pick<VersionService, 'nodeAsOf' | 'history' | 'retentionDays'>;
  code: Pick<CodeService, 'symbolContextPrepaid'>;
}) => [
  defineCapability({
    name: 'ontology.get_node',
    access: 'read',
    description:
      `A node and its edges, at most ${GET_NODE_EDGES} each way with the node at the other end; with \`as_of\`, ` +
      'as the graph stood then',
    input: z.strictObject({ node_id: nodeId, as_of: asOf }),
    output: z.object({
      node: NodeResponse,
      edges: z.object({
        outgoing: z.array(NodeEdge).describe('Edges from the node.'),
        incoming: z.array(NodeEdge).describe('Edges into the node.'),
      }),
      truncated: z
        .boolean()
        .describe(`true when the node has more than ${GET_NODE_EDGES} edges one way (list them with neighborhood).`),
    }),
    example: { node_id: '8d1e4f2a-0b6c-4e3d-a5f7-2c9b1e0d7a64' },
    errors: { 404: 'No live node with this id in the workspace (at `as_of`)' },
    // Today: the node as GET /v1/ontology/nodes/{id} answers it and its edges, in one statement (as
    // the route's one). With `as_of`: the node's version and its edges as the one-hop neighbourhood
    // (graph_neighborhood) held them then.
    handler: async ({ principal }, input) => {
      if (input.as_of === undefined) return deps.nodes.getWithEdges(principal, input.node_id, GET_NODE_EDGES);
      refuseOldAsOf(deps.versions, input.as_of);
      const [node, around] = await Promise.all([
        deps.versions.nodeAsOf(principal, input.node_id, input.as_of),
        deps.traversals.neighborhood(principal, {
          node_id: input.node_id,
          hops: 1,
          // Enough for a full page each way and the centre; the traversal's edge cap is its widest.
          node_limit: Math.max(LIMITS.neighborhood.nodeLimit.min, 2 * GET_NODE_EDGES + 2),
          edge_limit: LIMITS.neighborhood.edgeLimit.max,
          as_of: input.as_of,
        }),
      ]);
      const byId = new Map(around.nodes.map((found) => [found.id, found]));
      const withOther = (edge: (typeof around.edges)[number], otherId: string) => {
        const other = byId.get(otherId);
        return other ? [{ ...edge, other: { id: other.id, type: other.type, name: other.name } }] : [];
      };
      const outgoing = around.edges
        .filter((edge) => edge.source_node_id === input.node_id)
        .flatMap((edge) => withOther(edge, edge.target_node_id));
      const incoming = around.edges
        .filter((edge) => edge.target_node_id === input.node_id && edge.source_node_id !== input.node_id)
        .flatMap((edge) => withOther(edge, edge.source_node_id));
      return {
        node,
        edges: { outgoing: outgoing.slice(0, GET_NODE_EDGES), incoming: incoming.slice(0, GET_NODE_EDGES) },
        truncated:
          outgoing.length > GET_NODE_EDGES ||
          incoming.length > GET_NODE_EDGES ||
          around.truncated.nodes ||
          around.truncated.edges,
      };
    },
  }),
  defineCapability({
    name: 'ontology.find_nodes',
    access: 'read',
    description:
      'Nodes by name (case-insensitive substring: exact matches first, then by importance) and/or type; without ' +
      '`q`, the first nodes of `type`',
    input: z.strictObject({
      q: z.string().trim().min(1).max(LIMITS.queryLength).optional().describe('Part of the name.'),
      type: NodeTypeFilter.optional().describe('Only nodes of this type.'),
      limit: bounded(LIMITS.typeahead, 'How many nodes'),
    }),
    output: z.object({ nodes: z.array(NodeResponse) }),
    example: { q: 'Lovelace', type: 'person', limit: 5 },
    // GET /v1/ontology/nodes/typeahead.
    handler: async ({ principal }, input) => ({
      nodes: await deps.nodes.typeahead(principal, {
        q: input.q,
        type: input.type,
        limit: input.limit ?? LIMITS.typeahead.default,
      }),
    }),
  }),
  defineCapability({
    name: 'ontology.neighborhood',
    access: 'read',
    description:
      'The subgraph around a node, both directions, `hops` deep (the answer of graph_neighborhood); with `as_of`, ' +
      'as it stood then',
    input: z.strictObject({
      node_id: nodeId,
      hops: bounded(LIMITS.neighborhood.hops, 'How deep'),
      limit: bounded(LIMITS.neighborhood.nodeLimit, 'How many nodes'),
      as_of: asOf,
    }),
    // Their own copies of the routes' shapes: a named component would make the schema a bare $ref.
    output: z.object(GraphNeighborhoodResponse.shape),
    example: { node_id: '8d1e4f2a-0b6c-4e3d-a5f7-2c9b1e0d7a64', hops: 2 },
    errors: { 404: 'No live node with this id in the workspace (at `as_of`)' },
    // GET /v1/ontology/graph_neighborhood?node_id=….
    handler: ({ principal }, input) => {
      refuseOldAsOf(deps.versions, input.as_of);
      return deps.traversals.neighborhood(principal, {
        node_id: input.node_id,
        hops: input.hops ?? LIMITS.neighborhood.hops.default,
        node_limit: input.limit ?? LIMITS.neighborhood.nodeLimit.default,
        edge_limit: LIMITS.neighborhood.edgeLimit.default,
        as_of: input.as_of,
      });
    },
  }),
  defineCapability({
    name: 'ontology.history',
    access: 'read',
    description:
      'A node’s versions, newest first: who changed it (user, credential, run, prompt, capability call), when, ' +
      'and the fields before and after',
    input: z.strictObject({
      node_id: nodeId,
      limit: bounded({ min: 1, max: LIMITS.list.maxLimit, default: LIMITS.list.defaultLimit }, 'How many versions'),
      cursor: z.string().max(200).optional().describe('`next_cursor` of the previous answer, for older versions.'),
    }),
    output: z.object(NodeHistoryResponse.shape),
    example: { node_id: '8d1e4f2a-0b6c-4e3d-a5f7-2c9b1e0d7a64' },
    errors: { 404: 'The workspace has no node with this id, deleted or not' },
    // GET /v1/ontology/nodes/{node_id}/history.
    handler: ({ principal }, input) =>
      deps.versions.history(principal, input.node_id, {
        limit: input.limit ?? LIMITS.list.defaultLimit,
        cursor: input.cursor,
      }),
  }),
  defineCapability({
    name: 'ontology.symbol_context',
    access: 'read',
    description:
      'What surrounds a code symbol (by node_id, or name and type): its class, sibling methods, tests, callers, ' +
      'callees, similar code and recent commits (POST /v1/ontology/symbol-context)',
    // The route's 400 for neither node_id nor name and type is a 422 naming the field here, as every tool's.
    input: z
      .object(SymbolContextRequest.shape)
      .refine((body) => body.node_id !== undefined || (body.name && body.type), {
        message: 'Give node_id, or both name and type',
        path: ['node_id'],
      }),
    output: SymbolContextResponse.omit({ credit_receipt: true }),
    example: { name: 'Parser.parse', type: 'code.method' },
    errors: {
      404: 'symbol_not_found: no live symbol matches',
      409: 'ambiguous_symbol: several symbols match name and type; ask with node_id',
    },
    // The route's own read, confirming the layer's charge in its transaction; a failure refunds it.
    handler: ({ principal, confirm }, input) => deps.code.symbolContextPrepaid(principal, input, confirm),
  }),
];
