import { setTimeout as delay } from 'node:timers/promises';
import type { EntityManager } from 'typeorm';
import { InsufficientCreditsError, insufficientCreditsReason } from '../credits/errors';
import type { RateLimiter } from '../platform/api/rate-limit';
import { storedPrincipalLive } from '../platform/auth/credential-liveness';
import type { Principal } from '../platform/auth/principal';
import { thaw } from '../platform/auth/stored-principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { ConflictError, DomainError, RateLimitedError, UnavailableError } from '../platform/errors';
import type { Logger } from '../platform/logger';
import { enqueueEvent } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { LIMITS } from '../rules/limits';
import type { RunExecution } from '../runs/entities';
import { FINISHED_STATUSES } from '../runs/entities';
import { findExecution } from '../runs/execution-repository';
import type { DispatchRunRequest } from '../runs/schemas';
import type { RunService } from '../runs/service';
import { runWorkflow, runWorkflowId } from '../runs/workflow';
import type { RunSchedule } from './entities';
import { WEFT_PAUSE_NOTE } from './entities';
import type { RunScheduleChanged } from './events';
import { runScheduleChanged } from './events';
import * as repo from './repository';
import type { ScheduleSync } from './sync';
import { deleteTemporalSchedule } from './temporal';
import { changeOf } from './views';
import type { RunScheduleActionResult } from './workflow';

/**
 * Whether the schedule's stored identity may still act (the check webhook triggers make, on the same
 * frozen principal); the transaction acts as its user from here on, as key rows need.
 */
async function identityLive(m: EntityManager, schedule: RunSchedule): Promise<boolean> {
  await m.query(`SELECT set_config('app.user_id', $1, true)`, [schedule.principal.userId]);
  return storedPrincipalLive(m, schedule.workspaceId, schedule.principal);
}

/** The principal a run acts as (for cancelling it on its schedule's behalf): its dispatcher, as stored. */
const principalOfRun = (run: RunExecution): Principal => thaw(run.principal, run.workspaceId);

const finished = (run: RunExecution | null) => !run || FINISHED_STATUSES.includes(run.status);

/**
 * The fires of run schedules, the worker's half: what the action workflow's activities call. A fire
 * dispatches through the runs service's `dispatchWithin`, as `POST /v1/runs` and webhook triggers do,
 * as the schedule's identity re-checked now; its idempotency key is `schedule:<id>:<fire>`, so a
 * retried activity answers the run it dispatched before.
 */
export function createRunScheduleFires(deps: {
  uow: UnitOfWork;
  temporal: Pick<TemporalHandle, 'client' | 'workflows'>;
  runs: Pick<RunService, 'dispatchWithin' | 'kick' | 'cancel'>;
  sync: ScheduleSync;
  logger: Logger;
  /**
   * Admission as `POST /v1/runs` has it (issue 43 item 3): the per-credential rate limit every API
   * request passes (the same rule, counted in the worker runtime), and the workspace's fires per hour.
   */
  rateLimiter?: RateLimiter;
  firesPerHour?: number;
}) {
  const { uow, temporal, runs, sync, logger, rateLimiter, firesPerHour = LIMITS.schedules.firesPerHour } = deps;

  /** Why the fire may not dispatch now (skipped, not paused: a later fire may), or undefined. */
  async function admission(
    m: EntityManager,
    schedule: RunSchedule,
    principal: Principal,
    key: string,
  ): Promise<string | undefined> {
    const fires = await repo.firesInLastHour(m, schedule.workspaceId, key);
    // A retried fire whose run exists was admitted already: the dispatch answers that run.
    if (fires.own) return undefined;
    if (fires.others >= firesPerHour) {
      return `fires_per_hour: the workspace's schedules dispatched ${firesPerHour} runs in the last hour, its limit`;
    }
    try {
      await rateLimiter?.take(principal.credential, principal.userId);
    } catch (error) {
      if (!(error instanceof RateLimitedError)) throw error;
      const wait = error.retryAfterSeconds;
      return `rate_limited: the credential it acts as is over its request rate; retry after ${wait} s`;
    }
    return undefined;
  }

  /** Records why a fire dispatched nothing; `pause`: and pauses the schedule (it could only fail again). */
  async function refuse(m: EntityManager, schedule: RunSchedule, reason: string, pause: boolean) {
    await repo.updateSchedule(m, schedule.id, {
      lastRefusal: reason.slice(0, 500),
      ...(pause ? { paused: true, note: `${WEFT_PAUSE_NOTE}${reason}`.slice(0, LIMITS.schedules.noteChars) } : {}),
    });
    const event = changeOf((await repo.findSchedule(m, schedule.id))!);
    await enqueueEvent(m, runScheduleChanged, {
      workspaceId: schedule.workspaceId,
      aggregateId: schedule.id,
      payload: event,
    });
    return event;
  }

  return {
    /** One fire: dispatches the schedule's run, or records why not. */
    async fire(input: { workspaceId: string; scheduleId: string; fireId: string }): Promise<RunScheduleActionResult> {
      const { workspaceId, scheduleId } = input;
      const outcome = await uow(
        { workspaceId },
        async (m): Promise<RunScheduleActionResult & { change?: RunScheduleChanged }> => {
          const schedule = await repo.findSchedule(m, scheduleId);
          if (!schedule) return { outcome: 'gone' };
          if (!(await identityLive(m, schedule))) {
            logger.warn({ schedule_id: scheduleId }, 'run schedule fired, but its credential may no longer act');
            const reason = 'credential_revoked: the credential it acts as was revoked or expired, or its user left';
            return { outcome: 'refused', change: await refuse(m, schedule, reason, true) };
          }
          const principal = thaw(schedule.principal, schedule.workspaceId);
          const request = { ...schedule.runTemplate, idempotency_key: `schedule:${scheduleId}:${input.fireId}` };
          const refusal = await admission(m, schedule, principal, request.idempotency_key);
          if (refusal) {
            logger.warn({ schedule_id: scheduleId }, 'run schedule fired, but the fire was not admitted');
            return { outcome: 'refused', change: await refuse(m, schedule, refusal, false) };
          }
          try {
            // Checked again as a dispatch is (dispatchWithin): a tool, the identity's scopes or the balance
            // may have changed since the schedule was saved. In a savepoint: a refusal undoes the run alone,
            // and the refusal is still recorded.
            const run = await m.transaction((inner) =>
              runs.dispatchWithin(inner, principal, request as DispatchRunRequest, { scheduleId }),
            );
            return { outcome: 'dispatched', executionId: run.execution_id };
          } catch (error) {
            // A transient refusal (a flow key's expression waiting on a busy pool): the activity retries.
            if (!(error instanceof DomainError) || error instanceof UnavailableError) throw error;
            // Issue 43 item 2: the template's `flow.rate_limit` is full: this fire is skipped, the next may run.
            if (error instanceof RateLimitedError) {
              const wait = error.retryAfterSeconds ?? 1;
              const why = `rate_limited: the run's flow.rate_limit is full; retry after ${wait} s`;
              return { outcome: 'refused', change: await refuse(m, schedule, why, false) };
            }
            // Issue 43 item 4: the balance cannot pay the run: this fire is skipped, a later one may be paid.
            if (error instanceof InsufficientCreditsError) {
              return { outcome: 'refused', change: await refuse(m, schedule, insufficientCreditsReason(error), false) };
            }
            logger.warn({ err: error, schedule_id: scheduleId }, 'run schedule fired, but its run was refused');
            const pause = !(error instanceof ConflictError);
            return {
              outcome: 'refused',
              change: await refuse(m, schedule, `dispatch_refused: ${error.message}`, pause),
            };
          }
        },
      );
      const { change, ...result } = outcome;
      if (result.outcome === 'gone') await deleteTemporalSchedule(temporal, scheduleId);
      if (change) await sync(workspaceId, change);
      if (result.outcome === 'dispatched') runs.kick(workspaceId);
      return result;
    },

    /**
     * Waits up to `runWaitSeconds` for the run to finish (its workflow's result, a long poll on
     * Temporal), then answers how the row reads: the row is the truth (a cancel writes it first).
     */
    async awaitRun(input: {
      workspaceId: string;
      executionId: string;
    }): Promise<{ finished: boolean; status: string }> {
      const read = () => uow({ workspaceId: input.workspaceId }, (m) => findExecution(m, input.executionId));
      let run = await read();
      if (!finished(run)) {
        const started = Date.now();
        try {
          const handle = temporal.workflows.handle(runWorkflow, runWorkflowId(input.executionId));
          await temporal.workflows.resultWithin(
            handle,
            LIMITS.schedules.runWaitSeconds * 1000,
            () => new Error('wait'),
          );
        } catch {
          // Not started yet (the outbox starts it), or still running: read the row again, without spinning.
          if (Date.now() - started < 1000) await delay(1000);
        }
        run = await read();
      }
      return { finished: finished(run), status: run?.status ?? 'MISSING' };
    },

    /** Cancels the fire's run through the runs service (approvals cancelled, charges as for any cancel). */
    async cancelRun(input: { workspaceId: string; executionId: string }): Promise<void> {
      const run = await uow({ workspaceId: input.workspaceId }, (m) => findExecution(m, input.executionId));
      if (finished(run)) return;
      try {
        await runs.cancel(principalOfRun(run!), input.executionId);
      } catch (error) {
        // Finished meanwhile: nothing left to cancel.
        if (!(error instanceof ConflictError)) throw error;
      }
    },
  };
}

export type RunScheduleFires = ReturnType<typeof createRunScheduleFires>;
