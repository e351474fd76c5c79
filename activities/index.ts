import type { OutboxRelay } from '../src/outbox/relay';
import { createMaintenanceActivities } from './maintenance';

/** Everything activities need: the same domain services the API uses. */
export interface ActivityDeps {
  outbox: OutboxRelay;
}

/** The composition root of the worker's activities. Each group is a thin adapter over a service. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createMaintenanceActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
