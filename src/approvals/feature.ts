import type { UnitOfWork } from '../platform/db/unit-of-work';
import { RunApproval } from './entities';
import { approvalRoutes } from './routes';
import type { ApprovalService } from './service';
import { createApprovalService } from './service';
import type { ApprovalSubject } from './subject';

/**
 * The approvals inbox, the approval policy and the approval rules (issues 23, 31 part 4, 32). What an
 * approval decides on is a subject another feature registers (`approvalSubjects` in its feature.ts:
 * runs a step, change-sets a staged set); src/app hands them to this service.
 */
export const approvalsFeature = {
  name: 'approvals',
  services: {
    /** The inbox (list, get, resolve), the policy and the rules, as the API calls them. */
    approvals: (ctx: { uow: UnitOfWork; approvalSubjects: () => readonly ApprovalSubject[] }) =>
      createApprovalService({ uow: ctx.uow, subjects: ctx.approvalSubjects }),
  },
  tags: {
    approvals: 'Human approvals that suspended runs wait on.',
  },
  entities: [RunApproval],
  routes: (runtime: { services: { approvals: ApprovalService } }) => approvalRoutes(runtime.services.approvals),
};
