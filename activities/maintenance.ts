import type { ActivityDeps } from './index';

export function createMaintenanceActivities(deps: Pick<ActivityDeps, 'outbox'>) {
  return {
    /** Delivers outbox rows the API's fast path missed (for example after a crash). */
    async sweepOutbox(input: { minAgeSeconds: number }) {
      return deps.outbox.sweep(input.minAgeSeconds);
    },
  };
}
