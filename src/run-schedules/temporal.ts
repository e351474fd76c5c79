import type {
  ScheduleDescription,
  ScheduleOptions,
  ScheduleOptionsAction,
  ScheduleUpdateOptions,
} from '@temporalio/client';
import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import type { Priority } from '@temporalio/common';
import type { TemporalHandle } from '../platform/temporal/connection';
import { startSearchAttributes } from '../platform/temporal/search-attributes';
import { queuePriority } from '../platform/temporal/starter';
import { LIMITS } from '../rules/limits';
import type { OverlapPolicy } from './entities';
import type { RunScheduleChanged } from './events';
import type { RunScheduleRow } from './schemas';
import type { RunScheduleActionInput } from './workflow';
import { runScheduleActionWorkflow, runScheduleTemporalId } from './workflow';

// The run schedules' Temporal side: a row's definition applied to its Temporal Schedule, and what
// Temporal says of it. Payloads (the action's input, the memo) go through the client's codec, sealed
// under the workspace's key; the search attributes (WeftKind, WeftWorkspaceId) stay readable.

const OVERLAP: Record<OverlapPolicy, ScheduleOverlapPolicy> = {
  skip: ScheduleOverlapPolicy.SKIP,
  buffer_one: ScheduleOverlapPolicy.BUFFER_ONE,
  allow: ScheduleOverlapPolicy.ALLOW_ALL,
  cancel_other: ScheduleOverlapPolicy.CANCEL_OTHER,
};

type Temporal = Pick<TemporalHandle, 'client' | 'taskQueue'>;
type Definition = NonNullable<RunScheduleChanged['definition']>;

function scheduleOptions(temporal: Temporal, workspaceId: string, change: RunScheduleChanged, definition: Definition) {
  const input: RunScheduleActionInput = { workspaceId, scheduleId: change.schedule_id, revision: change.revision };
  const id = runScheduleTemporalId(change.schedule_id);
  const attributes = startSearchAttributes(runScheduleActionWorkflow.type, workspaceId);
  return {
    scheduleId: id,
    spec: {
      ...(definition.cron !== null
        ? { cronExpressions: [definition.cron] }
        : { intervals: [{ every: `${definition.interval_seconds}s` }] }),
      timezone: definition.timezone,
    },
    action: {
      type: 'startWorkflow' as const,
      workflowType: runScheduleActionWorkflow.type,
      args: [input],
      taskQueue: temporal.taskQueue,
      workflowId: id,
      typedSearchAttributes: attributes,
      staticSummary: definition.summary,
      // The fire waits in the task queue as the workspace's work (issue 43): the SDK's types leave
      // `priority` out of a schedule's action, but it sends it and the server applies it.
      priority: queuePriority(workspaceId),
    } as ScheduleOptionsAction & { priority?: Priority },
    policies: { overlap: OVERLAP[definition.overlap], catchupWindow: '1 minute' },
    state: { paused: definition.paused, note: definition.note ?? definition.summary },
    // Whose it is, for an operator (sealed like every payload: the codec endpoint opens it).
    memo: { owner: { workspaceId, scheduleId: change.schedule_id, createdBy: definition.created_by } },
    typedSearchAttributes: attributes,
  } satisfies ScheduleOptions;
}

const appliedRevision = (previous: ScheduleDescription) =>
  ((previous.action as { args?: RunScheduleActionInput[] }).args?.[0]?.revision ?? 0) as number;

/** Thrown inside an update to abandon it: Temporal already holds this revision or a newer one. */
class AlreadyApplied extends Error {}

/**
 * Makes the Temporal Schedule match the change: created, updated (unless it already holds this
 * revision or a newer one; the update is conditional on what it read), or deleted. Idempotent.
 */
export async function applyRunSchedule(
  temporal: Temporal,
  workspaceId: string,
  change: RunScheduleChanged,
): Promise<void> {
  const handle = temporal.client.schedule.getHandle(runScheduleTemporalId(change.schedule_id));
  if (!change.definition) {
    await deleteTemporalSchedule(temporal, change.schedule_id);
    return;
  }
  const options = scheduleOptions(temporal, workspaceId, change, change.definition);
  const { memo: _memo, scheduleId: _id, ...updated } = options;
  // Create, or update what exists. A schedule deleted between the create's refusal and the update
  // (behind Weft's back, or by a concurrent apply of the deletion) is created again: never a
  // failed delivery that would wait out its backoff for a race.
  for (let attempt = 1; ; attempt++) {
    try {
      await temporal.client.schedule.create(options);
      return;
    } catch (error) {
      if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    }
    try {
      // Conditional on the description it read (Temporal's conflict token), so no newer apply is lost.
      await handle.update((previous): ScheduleUpdateOptions => {
        if (appliedRevision(previous) >= change.revision) throw new AlreadyApplied();
        return updated;
      });
      return;
    } catch (refused) {
      if (refused instanceof AlreadyApplied) return;
      if (!(refused instanceof ScheduleNotFoundError) || attempt >= 3) throw refused;
    }
  }
}

/** Whether a schedule's row still exists, read in its workspace. */
export type ScheduleRowExists = (workspaceId: string, scheduleId: string) => Promise<boolean>;

/**
 * Applies the change, then deletes again a definition that landed after its row was deleted. Two
 * applies can land late: the API's own, still in flight past its wait under load, and the relay's
 * redelivery of an event whose first attempt failed, which a later deletion overtook (a failing row
 * does not hold back newer ones). Either would re-create a deleted schedule. The row is read after
 * the apply, so a deletion committed before it is seen here, and one committed after it applies its
 * own deletion afterwards.
 */
export async function applyWhileRowExists(
  temporal: Temporal,
  rowExists: ScheduleRowExists,
  workspaceId: string,
  change: RunScheduleChanged,
): Promise<void> {
  await applyRunSchedule(temporal, workspaceId, change);
  if (change.definition && !(await rowExists(workspaceId, change.schedule_id))) {
    await deleteTemporalSchedule(temporal, change.schedule_id);
  }
}

/** Deletes the Temporal Schedule; one already gone is what was asked for. */
export async function deleteTemporalSchedule(temporal: Pick<TemporalHandle, 'client'>, scheduleId: string) {
  try {
    await temporal.client.schedule.getHandle(runScheduleTemporalId(scheduleId)).delete();
  } catch (error) {
    if (!(error instanceof ScheduleNotFoundError)) throw error;
  }
}

/** What Temporal says of the schedule now, or null when it cannot say (unreachable, or not applied yet). */
export async function describeRunSchedule(
  temporal: Pick<TemporalHandle, 'client'>,
  scheduleId: string,
): Promise<RunScheduleRow['temporal']> {
  const id = runScheduleTemporalId(scheduleId);
  try {
    const described = await temporal.client.schedule.getHandle(id).describe();
    return {
      schedule_id: id,
      paused: described.state.paused,
      note: described.state.note ?? null,
      next_fire_times: described.info.nextActionTimes
        .slice(0, LIMITS.schedules.nextFireTimes)
        .map((at) => at.toISOString()),
      recent_fires: described.info.recentActions.map((fire) => ({
        scheduled_at: fire.scheduledAt.toISOString(),
        workflow_id: fire.action.workflow.workflowId,
      })),
      running: described.info.runningActions.map((action) => action.workflow.workflowId),
      fires: described.info.numActionsTaken,
      skipped_for_overlap: described.info.numActionsSkippedOverlap,
    };
  } catch {
    return null;
  }
}

/** Fires the schedule now, under its own overlap policy (Temporal's default for a trigger would allow all). */
export const triggerRunSchedule = (
  temporal: Pick<TemporalHandle, 'client'>,
  scheduleId: string,
  overlap: OverlapPolicy,
) => temporal.client.schedule.getHandle(runScheduleTemporalId(scheduleId)).trigger(OVERLAP[overlap]);
