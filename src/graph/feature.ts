import type { ScopedRead, UnitOfWork } from '../platform/db/unit-of-work';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { EdgeService } from './edge-service';
import { createEdgeService } from './edge-service';
import { Edge, Node } from './entities';
import { nodeCreated, nodeUpdated } from './events';
import type { NodeService } from './node-service';
import { createNodeService } from './node-service';
import { graphRoutes } from './routes';
import type { TraversalService } from './traversal-service';
import { createTraversalService } from './traversal-service';

/** Nodes, edges and traversals. */
export const graphFeature = {
  name: 'graph',
  services: {
    nodes: (ctx: { uow: UnitOfWork; read: ScopedRead; outbox: OutboxRelay }) =>
      createNodeService({ uow: ctx.uow, read: ctx.read, outbox: ctx.outbox }),
    edges: (ctx: { uow: UnitOfWork; read: ScopedRead }) => createEdgeService({ uow: ctx.uow, read: ctx.read }),
    traversals: (ctx: { uow: UnitOfWork }) => createTraversalService({ uow: ctx.uow }),
  },
  tags: {
    ontology: 'Nodes, edges, the type catalog and graph traversals of the workspace.',
  },
  entities: [Node, Edge],
  events: [nodeCreated, nodeUpdated],
  routes: (runtime: { services: { nodes: NodeService; edges: EdgeService; traversals: TraversalService } }) =>
    graphRoutes(runtime.services),
};
