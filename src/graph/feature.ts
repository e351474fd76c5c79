import type { Config } from '../platform/config';
import type { ScopedRead, UnitOfWork } from '../platform/db/unit-of-work';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import type { EdgeService } from './edge-service';
import { createEdgeService } from './edge-service';
import { Edge, Node } from './entities';
import { nodeCreated, nodeUpdated } from './events';
import type { NodeService } from './node-service';
import { createNodeService } from './node-service';
import { graphRoutes } from './routes';
import type { TraversalService } from './traversal-service';
import { createTraversalService } from './traversal-service';
import type { VersionService } from './versions-service';
import { createVersionService } from './versions-service';
import { graphVersionRetentionWorkflow } from './workflow';

type VersionConfig = Pick<Config, 'VERSION_RETENTION_DAYS'>;

/** Nodes, edges and traversals. */
export const graphFeature = {
  name: 'graph',
  services: {
    nodes: (ctx: { uow: UnitOfWork; read: ScopedRead; outbox: OutboxRelay }) =>
      createNodeService({ uow: ctx.uow, read: ctx.read, outbox: ctx.outbox }),
    edges: (ctx: { uow: UnitOfWork; read: ScopedRead }) => createEdgeService({ uow: ctx.uow, read: ctx.read }),
    traversals: (ctx: { uow: UnitOfWork; read: ScopedRead; config: VersionConfig }) =>
      createTraversalService({ uow: ctx.uow, read: ctx.read, retentionDays: ctx.config.VERSION_RETENTION_DAYS }),
    /** The graph's past (issue 31): as_of reads, history, diff, and the retention purge. */
    versions: (ctx: { uow: UnitOfWork; read: ScopedRead; config: VersionConfig }) =>
      createVersionService({ uow: ctx.uow, read: ctx.read, retentionDays: ctx.config.VERSION_RETENTION_DAYS }),
  },
  tags: {
    ontology: 'Nodes, edges, the type catalog and graph traversals of the workspace.',
  },
  entities: [Node, Edge],
  events: [nodeCreated, nodeUpdated],
  routes: (runtime: {
    services: { nodes: NodeService; edges: EdgeService; traversals: TraversalService; versions: VersionService };
  }) => graphRoutes(runtime.services),
  schedules: [
    {
      name: 'graph-version-retention',
      description: 'Daily: deletes graph versions older than VERSION_RETENTION_DAYS (default 90), in batches.',
      workflow: graphVersionRetentionWorkflow,
      args: [{}],
      spec: { intervals: [{ every: '1 day', offset: '4 hours' }] },
    },
  ] satisfies MaintenanceSchedule[],
};
