import type { MaintenanceSchedule } from '../temporal/schedules';
import { OutboxEvent } from './entities';
import { outboxSweepWorkflow } from './workflow';

/** The transactional outbox's table and its safety-net sweep. */
export const outboxFeature = {
  name: 'outbox',
  entities: [OutboxEvent],
  schedules: [
    {
      name: 'outbox-sweep',
      description: 'Delivers outbox events older than 30 s that the API did not hand off.',
      workflow: outboxSweepWorkflow,
      args: [{ minAgeSeconds: 30 }],
      spec: { intervals: [{ every: '1 minute' }] },
    },
  ] satisfies MaintenanceSchedule[],
};
