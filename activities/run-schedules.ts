import type { RunScheduleFires } from '../src/run-schedules/fires';

/** The run schedules' action steps: thin adapters over the fires service, each safe to repeat. */
export function createRunScheduleActivities(deps: { services: { runScheduleFires: RunScheduleFires } }) {
  const fires = deps.services.runScheduleFires;
  return {
    fireRunSchedule: (input: { workspaceId: string; scheduleId: string; fireId: string }) => fires.fire(input),
    awaitScheduledRun: (input: { workspaceId: string; executionId: string }) => fires.awaitRun(input),
    cancelScheduledRun: (input: { workspaceId: string; executionId: string }) => fires.cancelRun(input),
  };
}
