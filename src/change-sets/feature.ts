import type { UnitOfWork } from '../platform/db/unit-of-work';
import { changeSetRoutes } from './routes';
import type { ChangeSetService } from './service';
import { createChangeSetService } from './service';

/** Staged change-sets (issue 31 part 4): proposed graph writes waiting for a reviewer's approval. */
export const changeSetsFeature = {
  name: 'change-sets',
  services: {
    changeSets: (ctx: { uow: UnitOfWork }) => createChangeSetService(ctx),
  },
  tags: {
    'change-sets': 'Proposed graph writes that wait for a reviewer, applied all or nothing on approval.',
  },
  routes: (runtime: { services: { changeSets: ChangeSetService } }) => changeSetRoutes(runtime.services.changeSets),
};
