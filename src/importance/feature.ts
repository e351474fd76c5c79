import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import { createImportanceService } from './service';
import { importanceDecayWorkflow } from './workflow';

/** Node importance and its nightly decay (the settings are ontology-config's). */
export const importanceFeature = {
  name: 'importance',
  services: {
    importance: (ctx: { uow: UnitOfWork }) => createImportanceService({ uow: ctx.uow }),
  },
  schedules: [
    {
      name: 'importance-decay',
      description: 'Nightly: recomputes every live node’s importance with its workspace’s decay settings.',
      workflow: importanceDecayWorkflow,
      args: [{}],
      spec: { intervals: [{ every: '1 day', offset: '2 hours' }] },
    },
  ] satisfies MaintenanceSchedule[],
};
