import { ScheduleNotFoundError } from '@temporalio/client';
import type { EntityManager } from 'typeorm';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { freeze } from '../platform/auth/stored-principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { ValidationIssue } from '../platform/errors';
import {
  BadRequestError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  ValidationFailedError,
} from '../platform/errors';
import { enqueueEvent } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { LIMITS } from '../rules/limits';
import type { RunTemplate } from '../runs/schemas';
import type { RunService } from '../runs/service';
import { shortestCronGapSeconds } from './cron';
import type { RunSchedule } from './entities';
import { WEFT_PAUSE_NOTE } from './entities';
import type { RunScheduleChanged } from './events';
import { runScheduleChanged } from './events';
import * as repo from './repository';
import type { CreateRunScheduleRequest, RunScheduleRow, UpdateRunScheduleRequest } from './schemas';
import type { ScheduleSync } from './sync';
import { applyRunSchedule, describeRunSchedule, triggerRunSchedule } from './temporal';
import { changeOf, deletionOf, scheduleRow } from './views';

/**
 * Run schedules (issue 26 part 3), the API's half. Each change writes the row and a
 * `run_schedule.changed` event in one transaction, then applies the event to the Temporal Schedule
 * (`sync.ts`); reads add what Temporal says now (next fire times, running fires). The fires
 * themselves are `fires.ts`, called by the action workflow's activities.
 */
export function createRunScheduleService(deps: {
  uow: UnitOfWork;
  temporal: Pick<TemporalHandle, 'client' | 'taskQueue'>;
  runs: Pick<RunService, 'validate'>;
  sync: ScheduleSync;
  /** The deployment's shortest interval (SCHEDULE_MIN_INTERVAL_SECONDS, issue 43 item 3). */
  minIntervalSeconds?: number;
}) {
  const { uow, temporal, runs, sync, minIntervalSeconds = LIMITS.schedules.minIntervalSeconds } = deps;

  /** An interval, or a cron whose fires may come closer, than the deployment allows is 422 naming the field. */
  function checkOften(body: { cron?: string; interval?: number }) {
    const minimum = `the deployment's minimum interval is ${minIntervalSeconds} s (SCHEDULE_MIN_INTERVAL_SECONDS)`;
    const issue = (field: string, msg: string) =>
      new ValidationFailedError([{ loc: ['body', field], msg, type: 'schedule_too_frequent' }]);
    if (body.interval !== undefined && body.interval < minIntervalSeconds) {
      throw issue('interval', `Every ${body.interval} s is too often: ${minimum}`);
    }
    if (body.cron !== undefined) {
      const gap = shortestCronGapSeconds(body.cron);
      if (gap < minIntervalSeconds) throw issue('cron', `It may fire ${gap} s apart: ${minimum}`);
    }
  }

  /** A schedule dispatches runs as whoever set what or when it runs: that takes runs:write too. */
  function checkMayDispatch(principal: Pick<Principal, 'scopes'>, what: string) {
    if (!principal.scopes.has('runs:write')) {
      throw new ForbiddenError(`Missing scope runs:write: a run schedule dispatches runs, so ${what} needs it too`);
    }
  }

  /** The run as `POST /v1/runs` checks it, with the scopes its runs will act with; issues located under `run`. */
  async function checkTemplate(principal: Pick<Principal, 'scopes' | 'workspaceId'>, template: RunTemplate) {
    try {
      await runs.validate(principal, template);
    } catch (error) {
      if (!(error instanceof ValidationFailedError)) throw error;
      const issues = (error.detail as ValidationIssue[]).map((issue) => ({
        ...issue,
        loc: ['body', 'run', ...issue.loc.slice(1)],
      }));
      throw new ValidationFailedError(issues);
    }
  }

  /**
   * The template a schedule keeps, which its runs will now run as the caller (a trigger, a resume, a new
   * time or overlap): the caller must hold every scope its steps need (NM-3), or a narrow credential would
   * run tools it could not dispatch itself. The caller did not send it, so a lack is a 403; a `run` the
   * caller sends is refused as `POST /v1/runs` refuses it (400).
   */
  async function checkMayRunKept(principal: Pick<Principal, 'scopes' | 'workspaceId'>, template: RunTemplate) {
    try {
      await checkTemplate(principal, template);
    } catch (error) {
      // `validate`'s one 400 is a scope the steps need and the credential lacks.
      if (!(error instanceof BadRequestError)) throw error;
      throw new ForbiddenError(
        `${String(error.detail)}; a schedule's runs act as whoever fires, resumes or re-times it, so that needs it too`,
      );
    }
  }

  /** Whether the schedule already acts as this very credential (then a trigger changes nothing). */
  const actsAs = (schedule: RunSchedule, principal: Principal) =>
    schedule.principal.userId === principal.userId &&
    schedule.principal.credential.kind === principal.credential.kind &&
    schedule.principal.credential.id === principal.credential.id;

  async function mustFind(m: EntityManager, id: string): Promise<RunSchedule> {
    const schedule = await repo.findSchedule(m, id);
    if (!schedule) throw new NotFoundError({ error: 'run_schedule_not_found', id });
    return schedule;
  }

  /** Writes the event of the row as it now reads; answers the row and the event. */
  async function changed(m: EntityManager, id: string, change?: (row: RunSchedule) => RunScheduleChanged) {
    const row = await mustFind(m, id);
    const event = (change ?? changeOf)(row);
    await enqueueEvent(m, runScheduleChanged, { workspaceId: row.workspaceId, aggregateId: id, payload: event });
    return { row, event };
  }

  /** Commits a change, applies it to Temporal, and answers the row with Temporal's view. */
  async function commit(principal: Principal, work: (m: EntityManager) => Promise<string>) {
    const { row, event } = await uow(scopeOf(principal), async (m) => changed(m, await work(m)));
    const applied = await sync(principal.workspaceId, event);
    return scheduleRow(row, applied ? await describeRunSchedule(temporal, row.id) : null);
  }

  const read = async (schedule: RunSchedule) => scheduleRow(schedule, await describeRunSchedule(temporal, schedule.id));

  return {
    async create(principal: Principal, body: CreateRunScheduleRequest): Promise<RunScheduleRow> {
      checkMayDispatch(principal, 'creating one');
      checkOften(body);
      await checkTemplate(principal, body.run);
      return commit(principal, async (m) => {
        if ((await repo.countSchedules(m)) >= LIMITS.schedules.perWorkspace) {
          throw new ConflictError({
            error: 'run_schedule_limit',
            message: `A workspace keeps at most ${LIMITS.schedules.perWorkspace} run schedules`,
          });
        }
        return repo.insertSchedule(m, {
          workspaceId: principal.workspaceId,
          cron: body.cron ?? null,
          intervalSeconds: body.interval ?? null,
          timezone: body.timezone,
          runTemplate: body.run,
          overlap: body.overlap,
          paused: body.paused,
          note: body.note ?? null,
          principal: freeze(principal),
          createdBy: principal.userId,
        });
      });
    },

    async list(principal: Principal): Promise<{ schedules: RunScheduleRow[] }> {
      const rows = await uow(scopeOf(principal), repo.listSchedules);
      return { schedules: await Promise.all(rows.map(read)) };
    },

    get: async (principal: Principal, id: string): Promise<RunScheduleRow> =>
      read(await uow(scopeOf(principal), (m) => mustFind(m, id))),

    /**
     * Changing when or what it runs, or resuming it, makes the caller the identity its runs act as
     * (and needs runs:write); pausing or changing the note needs the manage scope alone, so a narrow
     * credential can still stop a schedule.
     */
    async update(principal: Principal, id: string, body: UpdateRunScheduleRequest): Promise<RunScheduleRow> {
      const takesOver =
        body.cron !== undefined ||
        body.interval !== undefined ||
        body.timezone !== undefined ||
        body.run !== undefined ||
        body.overlap !== undefined ||
        body.paused === false;
      if (takesOver) checkMayDispatch(principal, 'changing when or what it runs, or resuming it,');
      checkOften(body);
      if (body.run) await checkTemplate(principal, body.run);
      return commit(principal, async (m) => {
        const current = await mustFind(m, id);
        if (takesOver && !body.run) await checkMayRunKept(principal, current.runTemplate);
        await repo.updateSchedule(m, id, {
          cron: body.cron ?? (body.interval !== undefined ? null : undefined),
          intervalSeconds: body.interval ?? (body.cron !== undefined ? null : undefined),
          timezone: body.timezone,
          runTemplate: body.run,
          overlap: body.overlap,
          paused: body.paused,
          // Resumed: a note Weft wrote when it paused the schedule no longer holds.
          note: body.paused === false && current.note?.startsWith(WEFT_PAUSE_NOTE) ? (body.note ?? null) : body.note,
          principal: takesOver ? freeze(principal) : undefined,
        });
        return id;
      });
    },

    /**
     * Fires now, under the schedule's overlap policy, as the caller: it needs the scopes the run needs
     * and becomes the identity the schedule's runs act as, as a resume does and as a trigger's
     * redelivery does (NM-3). A schedule Temporal does not have yet (its apply still pending) is applied first.
     */
    async trigger(principal: Principal, id: string): Promise<{ id: string; triggered_at: string }> {
      checkMayDispatch(principal, 'triggering one');
      const { row: schedule, event } = await uow(scopeOf(principal), async (m) => {
        const current = await mustFind(m, id);
        await checkMayRunKept(principal, current.runTemplate);
        if (actsAs(current, principal)) return { row: current, event: undefined };
        await repo.updateSchedule(m, id, { principal: freeze(principal) });
        return changed(m, id);
      });
      // The fire reads the identity from the row; Temporal's copy (its summary names the user) follows.
      if (event) await sync(principal.workspaceId, event);
      const at = new Date().toISOString();
      try {
        await triggerRunSchedule(temporal, id, schedule.overlap);
      } catch (error) {
        if (!(error instanceof ScheduleNotFoundError)) throw error;
        await applyRunSchedule(temporal, principal.workspaceId, changeOf(schedule));
        await triggerRunSchedule(temporal, id, schedule.overlap);
      }
      return { id, triggered_at: at };
    },

    /** Deletes the row and its Temporal Schedule; the runs it dispatched stay (and keep its id). */
    async remove(principal: Principal, id: string): Promise<RunScheduleRow> {
      const { row, event } = await uow(scopeOf(principal), async (m) => {
        const found = await changed(m, id, deletionOf);
        await repo.deleteSchedule(m, id);
        return found;
      });
      await sync(principal.workspaceId, event);
      return scheduleRow(row, null);
    },
  };
}

export type RunScheduleService = ReturnType<typeof createRunScheduleService>;
