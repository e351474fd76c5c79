import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import { TypeCatalogEntry, WorkspaceEvent } from './entities';
import { typeCatalogRoutes } from './routes';
import type { TypeCatalogService } from './service';
import { createTypeCatalogService } from './service';
import { typeCatalogRefreshWorkflow } from './workflow';

/** The workspace's type catalog and its daily refresh. */
export const typeCatalogFeature = {
  name: 'type-catalog',
  services: {
    typeCatalog: (ctx: { uow: UnitOfWork }) => createTypeCatalogService({ uow: ctx.uow }),
  },
  entities: [TypeCatalogEntry, WorkspaceEvent],
  routes: (runtime: { services: { typeCatalog: TypeCatalogService } }) =>
    typeCatalogRoutes(runtime.services.typeCatalog),
  schedules: [
    {
      name: 'type-catalog-refresh',
      description:
        'Daily: recomputes every workspace’s type catalog (counts, keys, vanished types) and writes ' +
        'type_stats_refresh.',
      workflow: typeCatalogRefreshWorkflow,
      args: [{}],
      spec: { intervals: [{ every: '1 day', offset: '3 hours' }] },
    },
  ] satisfies MaintenanceSchedule[],
};
