import { z } from 'zod';
import { defineRoute } from '../platform/api/route';
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

const tags = ['ontology'];
const read = 'ontology:read' as const;
const write = 'ontology:write' as const;
const nodeNotFound = { 404: 'No live node with this id in the workspace' };
const edgeNotFound = { 404: 'No live edge with this id in the workspace' };

export const graphRoutes = (services: { nodes: NodeService; edges: EdgeService; traversals: TraversalService }) => {
  const { nodes, edges, traversals } = services;
  return [
    defineRoute({
      method: 'post', path: '/v1/ontology/nodes', summary: 'Create a node', tags, scope: write,
      query: WorkspaceQuery, body: NodeCreateRequest, status: 201, response: NodeResponse,
      handler: ({ auth, body }) => nodes.create(auth, body),
    }),
    defineRoute({
      method: 'get', path: '/v1/ontology/nodes', summary: 'List live nodes, oldest first', tags, scope: read,
      query: NodeListQuery, response: z.array(NodeResponse),
      handler: ({ auth, query }) => nodes.list(auth, query),
    }),
    defineRoute({
      method: 'delete', path: '/v1/ontology/nodes', summary: 'Soft-delete every node of a type and their incident edges', tags, scope: write,
      query: NodeDeleteByTypeQuery, response: DeleteNodesByTypeResponse, errors: { 400: 'type is missing or blank' },
      handler: ({ auth, query }) => nodes.deleteByType(auth, query.type),
    }),
    // Before /nodes/{node_id}, which would otherwise take "typeahead" for an id.
    defineRoute({
      method: 'get', path: '/v1/ontology/nodes/typeahead', summary: 'Name typeahead: exact matches first, then by importance; free', tags, scope: read,
      query: TypeaheadQuery, response: z.array(NodeResponse),
      handler: ({ auth, query }) => nodes.typeahead(auth, query),
    }),
    defineRoute({
      method: 'get', path: '/v1/ontology/nodes/{node_id}', summary: 'Get a node', tags, scope: read,
      params: NodeIdParams, query: NodeGetQuery, response: NodeResponse, errors: nodeNotFound,
      handler: ({ auth, params, query }) => nodes.get(auth, params.node_id, query.include_embedding),
    }),
    defineRoute({
      method: 'patch', path: '/v1/ontology/nodes/{node_id}', summary: 'Update a node’s name, type or properties (merged)', tags, scope: write,
      params: NodeIdParams, query: WorkspaceQuery, body: NodePatchRequest, response: NodeResponse, errors: nodeNotFound,
      handler: ({ auth, params, body }) => nodes.patch(auth, params.node_id, body),
    }),
    defineRoute({
      method: 'delete', path: '/v1/ontology/nodes/{node_id}', summary: 'Soft-delete a node and its incident edges', tags, scope: write,
      params: NodeIdParams, query: WorkspaceQuery, response: NodeResponse, errors: nodeNotFound,
      handler: ({ auth, params }) => nodes.remove(auth, params.node_id),
    }),
    defineRoute({
      method: 'post', path: '/v1/ontology/edges', summary: 'Create an edge; both ends count a reference', tags, scope: write,
      query: WorkspaceQuery, body: EdgeCreateRequest, status: 201, response: EdgeResponse,
      errors: { 400: 'The two nodes are in different workspaces', 404: 'A node is not visible to the workspace' },
      handler: ({ auth, body }) => edges.create(auth, body),
    }),
    defineRoute({
      method: 'get', path: '/v1/ontology/edges', summary: 'List live edges, oldest first', tags, scope: read,
      query: EdgeListQuery, response: z.array(EdgeResponse),
      handler: ({ auth, query }) => edges.list(auth, query),
    }),
    defineRoute({
      method: 'get', path: '/v1/ontology/edges/{edge_id}', summary: 'Get an edge', tags, scope: read,
      params: EdgeIdParams, query: WorkspaceQuery, response: EdgeResponse, errors: edgeNotFound,
      handler: ({ auth, params }) => edges.get(auth, params.edge_id),
    }),
    defineRoute({
      method: 'delete', path: '/v1/ontology/edges/{edge_id}', summary: 'Soft-delete an edge', tags, scope: write,
      params: EdgeIdParams, query: WorkspaceQuery, response: EdgeResponse, errors: edgeNotFound,
      handler: ({ auth, params }) => edges.remove(auth, params.edge_id),
    }),
    defineRoute({
      method: 'get', path: '/v1/ontology/graph_overview', summary: 'Clusters of nodes (by type or type and name path) and the edges between them', tags, scope: read,
      query: GraphOverviewQuery, response: GraphOverviewRecord,
      handler: ({ auth, query }) => traversals.overview(auth, query),
    }),
    defineRoute({
      method: 'get', path: '/v1/ontology/graph_stats', summary: 'Totals, distributions, hubs, degrees and connectivity of the live graph', tags, scope: read,
      query: GraphStatsQuery, response: GraphStatsRecord,
      handler: ({ auth, query }) => traversals.stats(auth, query),
    }),
    defineRoute({
      method: 'get', path: '/v1/ontology/graph_neighborhood', summary: 'The bidirectional subgraph around a node or the best name match', tags, scope: read,
      query: NeighborhoodQuery, response: GraphNeighborhoodResponse, errors: nodeNotFound,
      handler: ({ auth, query }) => traversals.neighborhood(auth, query),
    }),
    defineRoute({
      method: 'get', path: '/v1/ontology/family_tree', summary: 'Every node within `degrees` hops and every live edge between them', tags, scope: read,
      query: FamilyTreeQuery, response: GraphNeighborhoodResponse, errors: nodeNotFound,
      handler: ({ auth, query }) => traversals.familyTree(auth, query),
    }),
  ];
};
