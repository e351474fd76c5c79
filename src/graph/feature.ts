import type { EdgeService } from './edge-service';
import { Edge, Node } from './entities';
import { nodeCreated, nodeUpdated } from './events';
import type { NodeService } from './node-service';
import { graphRoutes } from './routes';
import type { TraversalService } from './traversal-service';

/** Nodes, edges and traversals. */
export const graphFeature = {
  name: 'graph',
  tags: {
    ontology: 'Nodes, edges, the type catalog and graph traversals of the workspace.',
  },
  entities: [Node, Edge],
  events: [nodeCreated, nodeUpdated],
  routes: (runtime: { services: { nodes: NodeService; edges: EdgeService; traversals: TraversalService } }) =>
    graphRoutes(runtime.services),
};
