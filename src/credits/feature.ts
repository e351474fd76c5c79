import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import { CreditLedgerEntry } from './entities';
import { creditRoutes } from './routes';
import type { CreditService } from './service';
import { createCreditService } from './service';
import { creditsReconcileWorkflow } from './workflow';

/** Credit balances, the ledger and the reservation safety net (prices are in src/rules/costs.ts). */
export const creditsFeature = {
  name: 'credits',
  services: {
    credits: (ctx: { uow: UnitOfWork; logger: Logger }) => createCreditService(ctx),
  },
  tags: {
    billing: 'The tenant’s credit balance and the workspace’s credit ledger.',
  },
  entities: [CreditLedgerEntry],
  routes: (runtime: { services: { credits: CreditService } }) => creditRoutes(runtime.services.credits),
  schedules: [
    {
      name: 'credits-reconcile',
      description:
        'Refunds reservations (searches, embeddings) still pending after 15 minutes: their work died before settling.',
      workflow: creditsReconcileWorkflow,
      args: [{ minAgeSeconds: 900 }],
      spec: { intervals: [{ every: '5 minutes' }] },
    },
  ] satisfies MaintenanceSchedule[],
};
