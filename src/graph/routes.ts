import { z } from 'zod';
import { defineRoute } from '../platform/api/route';
import { LIMITS } from '../rules/limits';
import type { EdgeService } from './edge-service';
import type { NodeService } from './node-service';
import {
  DeleteNodesByTypeResponse,
  EdgeCreateRequest,
  EdgeIdParams,
  EdgeListQuery,
  EdgeResponse,
  NodeCreateRequest,
  NodeDeleteByTypeQuery,
  NodeGetQuery,
  NodeIdParams,
  NodeListQuery,
  NodePatchRequest,
  NodeResponse,
  TypeaheadQuery,
  WorkspaceQuery,
} from './schemas';
import {
  FamilyTreeQuery,
  GraphNeighborhoodResponse,
  GraphOverviewQuery,
  GraphOverviewRecord,
  GraphStatsQuery,
  GraphStatsRecord,
  NeighborhoodQuery,
} from './traversal-schemas';
import type { TraversalService } from './traversal-service';
import { GraphDiffQuery, GraphDiffResponse, NodeHistoryQuery, NodeHistoryResponse } from './versions-schemas';
import type { VersionService } from './versions-service';

const tags = ['ontology'] as const;
const read = 'ontology:read' as const;
const write = 'ontology:write' as const;
const nodeNotFound = { 404: 'No live node with this id in the workspace' };
const edgeNotFound = { 404: 'No live edge with this id in the workspace' };
const page = `\`limit\` up to ${LIMITS.list.maxLimit} (default ${LIMITS.list.defaultLimit}), \`offset\` from 0`;

const asOfNote =
  ' With `as_of`, as the graph stood then (issue 31; importance and reference counts are today’s); 422 before ' +
  'the version retention horizon (`VERSION_RETENTION_DAYS`).';

export const graphRoutes = (services: {
  nodes: NodeService;
  edges: EdgeService;
  traversals: TraversalService;
  versions: VersionService;
}) => {
  const { nodes, edges, traversals, versions } = services;
  return [
    defineRoute({
      method: 'post',
      path: '/v1/ontology/nodes',
      operationId: 'createNode',
      summary: 'Create a node',
      description:
        'Creates a node; its type registers itself in the catalog, and its name is embedded asynchronously ' +
        `(\`has_embedding\` turns true later). Type at most ${LIMITS.typeLength} characters, name at most ` +
        `${LIMITS.nodeNameLength}.`,
      tags,
      scope: write,
      query: WorkspaceQuery,
      body: NodeCreateRequest,
      example: { type: 'person', name: 'Ada Lovelace', properties: { email: 'ada@example.org' } },
      status: 201,
      response: NodeResponse,
      handler: ({ auth, body }) => nodes.create(auth, body),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/ontology/nodes',
      reads: 'standby',
      operationId: 'listNodes',
      summary: 'List live nodes, oldest first',
      description: `Live nodes, oldest first, optionally of one type or connection; ${page}.`,
      tags,
      scope: read,
      query: NodeListQuery,
      response: z.array(NodeResponse),
      handler: ({ auth, query }) => nodes.list(auth, query),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/ontology/nodes',
      operationId: 'deleteNodesByType',
      summary: 'Soft-delete every node of a type and their incident edges',
      description: 'Soft-deletes every live node of `type` and every edge touching one; 400 when `type` is missing.',
      tags,
      scope: write,
      query: NodeDeleteByTypeQuery,
      response: DeleteNodesByTypeResponse,
      errors: { 400: 'type is missing or blank' },
      handler: ({ auth, query }) => nodes.deleteByType(auth, query.type),
    }),
    // Before /nodes/{node_id}, which would otherwise take "typeahead" for an id.
    defineRoute({
      method: 'get',
      path: '/v1/ontology/nodes/typeahead',
      reads: 'standby',
      operationId: 'typeaheadNodes',
      summary: 'Name typeahead: exact matches first, then by importance; free',
      description:
        `Case-insensitive substring match of \`q\` (at most ${LIMITS.queryLength} characters) on names: exact ` +
        'matches first, then by importance. Without `q`, the first nodes of `type`. ' +
        `\`limit\` ${LIMITS.typeahead.min} to ${LIMITS.typeahead.max} (default ${LIMITS.typeahead.default}). ` +
        'No credit charge.',
      tags,
      scope: read,
      query: TypeaheadQuery,
      response: z.array(NodeResponse),
      handler: ({ auth, query }) => nodes.typeahead(auth, query),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/ontology/nodes/{node_id}',
      reads: 'standby',
      operationId: 'getNode',
      summary: 'Get a node',
      description:
        'A live node; with `include_embedding=true` its vector too. Deleted and foreign nodes are 404. With ' +
        '`as_of`, the node as it stood then (404 when it did not exist or was deleted then; its vector, importance ' +
        'and reference count are not versioned: the vector is left out, the counts are today’s); 422 before the ' +
        'version retention horizon.',
      tags,
      scope: read,
      params: NodeIdParams,
      query: NodeGetQuery,
      response: NodeResponse,
      errors: { ...nodeNotFound, 422: 'as_of before the version retention horizon (the message names it)' },
      handler: ({ auth, params, query }) =>
        query.as_of === undefined
          ? nodes.get(auth, params.node_id, query.include_embedding)
          : versions.nodeAsOf(auth, params.node_id, query.as_of),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/ontology/nodes/{node_id}/history',
      reads: 'standby',
      operationId: 'getNodeHistory',
      summary: 'A node’s versions, newest first, cursor-paged',
      description:
        'Every create, update, soft delete, restore and merge of the node since the retention horizon: who ' +
        '(user, credential kind and id, run, prompt, capability call), when, the operation and its label, and the ' +
        `changed fields before and after. \`limit\` up to ${LIMITS.list.maxLimit} (default ` +
        `${LIMITS.list.defaultLimit}); pass \`next_cursor\` as \`cursor\` for older versions. 404 when the ` +
        'workspace has no such node, deleted or not.',
      tags,
      scope: read,
      params: NodeIdParams,
      query: NodeHistoryQuery,
      response: NodeHistoryResponse,
      errors: { 404: 'No node with this id in the workspace' },
      handler: ({ auth, params, query }) => versions.history(auth, params.node_id, query),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/ontology/diff',
      reads: 'standby',
      operationId: 'getGraphDiff',
      summary: 'Nodes and edges added, changed and removed between two instants, paged',
      description:
        'What changed between `from` and `to` (default now): each node or edge some version in between touched, ' +
        'with its state at both ends, the change (`added`, `changed`, `removed`) and the versioned fields that ' +
        'differ; one created and deleted in between, or changed back, is left out. Edges first, then nodes, by ' +
        `id; \`limit\` up to ${LIMITS.list.maxLimit} entities per page (default ${LIMITS.list.defaultLimit}); ` +
        'pass `next_cursor` as `cursor`. 422 when `from` is before the version retention horizon or `to` before ' +
        '`from`.',
      tags,
      scope: read,
      query: GraphDiffQuery,
      response: GraphDiffResponse,
      errors: { 422: 'from before the version retention horizon (the message names it), or to before from' },
      handler: ({ auth, query }) => versions.diff(auth, query),
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/ontology/nodes/{node_id}',
      operationId: 'updateNode',
      summary: 'Update a node’s name, type or properties (merged)',
      description:
        'Changes the name, type or properties (merged; a null value removes a key). A new name is embedded again.',
      tags,
      scope: write,
      params: NodeIdParams,
      query: WorkspaceQuery,
      body: NodePatchRequest,
      example: { name: 'Augusta Ada King', properties: { title: 'Countess of Lovelace' } },
      response: NodeResponse,
      errors: nodeNotFound,
      handler: ({ auth, params, body }) => nodes.patch(auth, params.node_id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/ontology/nodes/{node_id}',
      operationId: 'deleteNode',
      summary: 'Soft-delete a node and its incident edges',
      description: 'Marks the node and every edge touching it deleted and answers with the node (`is_deleted: true`).',
      tags,
      scope: write,
      params: NodeIdParams,
      query: WorkspaceQuery,
      response: NodeResponse,
      errors: nodeNotFound,
      handler: ({ auth, params }) => nodes.remove(auth, params.node_id),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/ontology/edges',
      operationId: 'createEdge',
      summary: 'Create an edge; both ends count a reference',
      description:
        'A directed, typed edge between two live nodes of the workspace; both ends count a reference and their ' +
        `importance is recomputed. \`reasoning\` and \`evidence\` at most ${LIMITS.edgeTextLength} characters each. ` +
        'A CONTAINS edge (any case) that would put a node claimed by one agent session under a node claimed by ' +
        'another is refused with 409 `claim_conflict`, as `agent.claim_work` refuses the second claim.',
      tags,
      scope: write,
      query: WorkspaceQuery,
      body: EdgeCreateRequest,
      example: {
        type: 'works_at',
        source_node_id: '3f2b8c1e-6d4a-4e7b-9c2f-1a5e8d7b6c40',
        target_node_id: '9a7c5e3b-1f2d-4c6a-8b9e-0d4f2a6c8e11',
        reasoning: 'Stated in the onboarding notes.',
      },
      status: 201,
      response: EdgeResponse,
      errors: {
        400: 'The two nodes are in different workspaces',
        404: 'A node is not visible to the workspace',
        409: 'A CONTAINS edge would join two sessions’ claims (`detail.error` = `claim_conflict`, naming both claims)',
      },
      handler: ({ auth, body }) => edges.create(auth, body),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/ontology/edges',
      reads: 'standby',
      operationId: 'listEdges',
      summary: 'List live edges, oldest first',
      description: `Live edges, oldest first, optionally by source, target or type; ${page}.`,
      tags,
      scope: read,
      query: EdgeListQuery,
      response: z.array(EdgeResponse),
      handler: ({ auth, query }) => edges.list(auth, query),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/ontology/edges/{edge_id}',
      reads: 'standby',
      operationId: 'getEdge',
      summary: 'Get an edge',
      description: 'A live edge; deleted and foreign edges are 404.',
      tags,
      scope: read,
      params: EdgeIdParams,
      query: WorkspaceQuery,
      response: EdgeResponse,
      errors: edgeNotFound,
      handler: ({ auth, params }) => edges.get(auth, params.edge_id),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/ontology/edges/{edge_id}',
      operationId: 'deleteEdge',
      summary: 'Soft-delete an edge',
      description: 'Marks the edge deleted and answers with it (`is_deleted: true`).',
      tags,
      scope: write,
      params: EdgeIdParams,
      query: WorkspaceQuery,
      response: EdgeResponse,
      errors: edgeNotFound,
      handler: ({ auth, params }) => edges.remove(auth, params.edge_id),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/ontology/graph_overview',
      reads: 'standby',
      operationId: 'getGraphOverview',
      summary: 'Clusters of nodes (by type, type and name path, or community) and the edges between them',
      description:
        'Supernodes by type, or by type and the first `/`-segment of the name, or (`group_by=community`) by the ' +
        'stored community each node is MEMBER_OF (`_none` for the others), with the edges between them. ' +
        `At most \`max_supernodes\` clusters (${LIMITS.overview.maxSupernodes.min} to ` +
        `${LIMITS.overview.maxSupernodes.max}, default ${LIMITS.overview.maxSupernodes.default}); ` +
        'the rest fold into `_other`.',
      tags,
      scope: read,
      query: GraphOverviewQuery,
      response: GraphOverviewRecord,
      handler: ({ auth, query }) => traversals.overview(auth, query),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/ontology/graph_stats',
      reads: 'standby',
      operationId: 'getGraphStats',
      summary: 'Totals, distributions, hubs, degrees and connectivity of the live graph',
      description:
        `Counts of live rows by type and connection, the top \`top_hubs_limit\` hubs (${LIMITS.stats.topHubs.min} to ` +
        `${LIMITS.stats.topHubs.max}, default ${LIMITS.stats.topHubs.default}), the degree distribution and density. ` +
        `Components are exact up to ${LIMITS.stats.exactConnectivityMaxEdges} live edges, null above.`,
      tags,
      scope: read,
      query: GraphStatsQuery,
      response: GraphStatsRecord,
      handler: ({ auth, query }) => traversals.stats(auth, query),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/ontology/graph_neighborhood',
      reads: 'standby',
      operationId: 'getGraphNeighborhood',
      summary: 'The bidirectional subgraph around a node or the best name match',
      description:
        `Exactly one of \`node_id\` and \`q\` (at most ${LIMITS.queryLength} characters; up to ` +
        `${LIMITS.neighborhood.candidates} candidates come back). \`hops\` ${LIMITS.neighborhood.hops.min} to ` +
        `${LIMITS.neighborhood.hops.max} (default ${LIMITS.neighborhood.hops.default}), \`node_limit\` ` +
        `${LIMITS.neighborhood.nodeLimit.min} to ${LIMITS.neighborhood.nodeLimit.max} (default ` +
        `${LIMITS.neighborhood.nodeLimit.default}), \`edge_limit\` ${LIMITS.neighborhood.edgeLimit.min} to ` +
        `${LIMITS.neighborhood.edgeLimit.max} (default ${LIMITS.neighborhood.edgeLimit.default}).${asOfNote}`,
      tags,
      scope: read,
      query: NeighborhoodQuery,
      response: GraphNeighborhoodResponse,
      errors: nodeNotFound,
      handler: ({ auth, query }) => traversals.neighborhood(auth, query),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/ontology/family_tree',
      reads: 'standby',
      operationId: 'getFamilyTree',
      summary: 'Every node within `degrees` hops and every live edge between them',
      description:
        `\`degrees\` ${LIMITS.familyTree.degrees.min} to ${LIMITS.familyTree.degrees.max} (default ` +
        `${LIMITS.familyTree.degrees.default}), \`node_limit\` ${LIMITS.familyTree.nodeLimit.min} to ` +
        `${LIMITS.familyTree.nodeLimit.max} (default ${LIMITS.familyTree.nodeLimit.default}, the centre included), ` +
        `\`edge_limit\` ${LIMITS.familyTree.edgeLimit.min} to ${LIMITS.familyTree.edgeLimit.max} (default ` +
        `${LIMITS.familyTree.edgeLimit.default}).${asOfNote}`,
      tags,
      scope: read,
      query: FamilyTreeQuery,
      response: GraphNeighborhoodResponse,
      errors: nodeNotFound,
      handler: ({ auth, query }) => traversals.familyTree(auth, query),
    }),
  ];
};
