import type { ApiTag } from '../platform/openapi/tags';
import type { EdgeService } from './edge-service';
import { Edge, Node } from './entities';
import type { NodeService } from './node-service';
import { graphRoutes } from './routes';
import type { TraversalService } from './traversal-service';

/** Nodes, edges and traversals. */
export const graphFeature = {
  name: 'graph',
  tags: ['ontology'] satisfies ApiTag[],
  entities: [Node, Edge],
  routes: (runtime: { services: { nodes: NodeService; edges: EdgeService; traversals: TraversalService } }) =>
    graphRoutes(runtime.services),
};
