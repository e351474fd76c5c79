import type { Client } from '@temporalio/client';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import { deleteSchedules, ensureSchedules } from '../platform/temporal/schedules';
import { FEATURES } from './features';

export type { MaintenanceSchedule } from '../platform/temporal/schedules';
export { scheduleId } from '../platform/temporal/schedules';

/** Every recurring job Weft runs, from the features' manifests. */
export const MAINTENANCE_SCHEDULES: readonly MaintenanceSchedule[] = FEATURES.flatMap(
  (feature) => feature.schedules ?? [],
);

/** Creates or updates every schedule on the task queue (see ensureSchedules). */
export const ensureMaintenanceSchedules = (client: Client, taskQueue: string, options: { paused?: boolean } = {}) =>
  ensureSchedules(client, taskQueue, MAINTENANCE_SCHEDULES, options);

/** Removes the task queue's schedules; idempotent. */
export const deleteMaintenanceSchedules = (client: Client, taskQueue: string) =>
  deleteSchedules(client, taskQueue, MAINTENANCE_SCHEDULES);
