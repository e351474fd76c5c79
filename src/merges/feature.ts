import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { TemporalHandle } from '../platform/temporal/connection';
import { MergeAction, MergeCandidate } from './entities';
import { startPersonResolver } from './outbox-handler';
import { mergeRoutes } from './routes';
import type { MergeService } from './service';
import { createMergeService } from './service';

/** The person-merge queue: the resolver proposes, a person decides. */
export const mergesFeature = {
  name: 'merges',
  services: {
    merges: (ctx: { uow: UnitOfWork; temporal: TemporalHandle }) =>
      createMergeService({ uow: ctx.uow, temporal: ctx.temporal }),
  },
  tags: {
    merges: 'The person-merge queue: candidates proposed by the resolver, approved or rejected by a person.',
  },
  entities: [MergeCandidate, MergeAction],
  routes: (runtime: { services: { merges: MergeService } }) => mergeRoutes(runtime.services.merges),
  // node.created, person-type nodes only (the handler filters by type).
  outboxHandlers: (temporal: TemporalHandle) => [startPersonResolver(temporal)],
};
