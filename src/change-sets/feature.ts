import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { OutboxRelay } from '../platform/outbox/relay';
import { changeSetApprovals } from './approval-subject';
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
  // A staged change-set waits on an approval of the inbox (`/v1/approvals`); resolving it applies or rejects it.
  approvalSubjects: (ctx: { outbox: Pick<OutboxRelay, 'kick'> }) => [changeSetApprovals(ctx)],
};
