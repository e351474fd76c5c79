import type { CreditService } from '../credits/service';
import type { Config } from '../platform/config';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import { communityRoutes } from './routes';
import type { CommunityService } from './service';
import { createCommunityService } from './service';
import { createCommunitySummariser } from './summary-model';
import { communityRefreshWorkflow } from './workflow';

/** Communities: Louvain over the graph, stored as `community` nodes, on a schedule and on demand. */
export const communitiesFeature = {
  name: 'communities',
  services: {
    communities: (ctx: {
      uow: UnitOfWork;
      temporal: TemporalHandle;
      config: Config;
      services: { credits: CreditService };
    }) =>
      createCommunityService({
        uow: ctx.uow,
        temporal: ctx.temporal,
        credits: ctx.services.credits,
        summariser: createCommunitySummariser(ctx.config),
      }),
  },
  tags: {
    communities: 'Communities of the graph (Louvain), stored as `community` nodes with MEMBER_OF edges.',
  },
  routes: (runtime: { services: { communities: CommunityService } }) => communityRoutes(runtime.services.communities),
  schedules: [
    {
      name: 'community-refresh',
      description:
        'Hourly: recomputes the communities of every workspace whose graph changed enough since its last pass.',
      workflow: communityRefreshWorkflow,
      args: [{}],
      spec: { intervals: [{ every: '1 hour', offset: '17 minutes' }] },
    },
  ] satisfies MaintenanceSchedule[],
};
