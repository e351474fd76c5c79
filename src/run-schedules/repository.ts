import type { EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import type { StoredPrincipal } from '../platform/auth/stored-principal';
import { queryFirst } from '../platform/db/query';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { RunSchedule } from './entities';

const schedules = (m: EntityManager) => m.getRepository(RunSchedule);

export type NewRunSchedule = Pick<
  RunSchedule,
  | 'workspaceId'
  | 'cron'
  | 'intervalSeconds'
  | 'timezone'
  | 'runTemplate'
  | 'overlap'
  | 'paused'
  | 'note'
  | 'principal'
  | 'createdBy'
>;

export async function insertSchedule(m: EntityManager, row: NewRunSchedule): Promise<string> {
  const inserted = await queryFirst<{ id: string }>(
    m,
    `INSERT INTO run_schedules (workspace_id, cron, interval_seconds, timezone, run_template, overlap, paused, note,
       principal, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
    [
      row.workspaceId,
      row.cron,
      row.intervalSeconds,
      row.timezone,
      JSON.stringify(row.runTemplate),
      row.overlap,
      row.paused,
      row.note,
      JSON.stringify(row.principal),
      row.createdBy,
    ],
  );
  return inserted!.id;
}

export const findSchedule = (m: EntityManager, id: string) => schedules(m).findOneBy({ id });

export const listSchedules = (m: EntityManager) =>
  schedules(m).find({ order: { createdAt: 'DESC', id: 'DESC' }, take: 1000 });

export const countSchedules = (m: EntityManager) => schedules(m).count();

export type RunSchedulePatch = Partial<
  Pick<RunSchedule, 'cron' | 'intervalSeconds' | 'timezone' | 'runTemplate' | 'overlap' | 'paused' | 'note'>
> & { principal?: StoredPrincipal; lastRefusal?: string };

/** Applies the change and counts a revision (the Temporal Schedule follows the newest). */
export async function updateSchedule(m: EntityManager, id: string, patch: RunSchedulePatch): Promise<void> {
  const { lastRefusal, ...rest } = patch;
  const set = Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined));
  await schedules(m)
    .createQueryBuilder()
    .update(RunSchedule)
    .set({
      ...set,
      ...(lastRefusal === undefined ? {} : { lastRefusal, lastRefusedAt: () => 'now()' }),
      revision: () => 'revision + 1',
      updatedAt: () => 'now()',
      // The jsonb columns' unions are more than TypeORM's partial-entity type follows.
    } as QueryDeepPartialEntity<RunSchedule>)
    .where('id = :id', { id })
    .execute();
}

export async function deleteSchedule(m: EntityManager, id: string): Promise<void> {
  await schedules(m).delete({ id });
}

/** Whether a schedule's row still exists, each read a unit of work in its workspace. */
export const scheduleRowExists =
  (uow: UnitOfWork) =>
  (workspaceId: string, scheduleId: string): Promise<boolean> =>
    uow({ workspaceId }, async (m) => (await findSchedule(m, scheduleId)) !== null);

/**
 * How many runs the workspace's schedules dispatched in the last hour besides the fire keyed `key`,
 * and whether that fire's own run exists already (a retried fire): under a lock per workspace held to
 * the commit, so two fires at once cannot both take the last place (issue 43 item 3).
 */
export async function firesInLastHour(
  m: EntityManager,
  workspaceId: string,
  key: string,
): Promise<{ others: number; own: boolean }> {
  await m.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`schedule-fires:${workspaceId}`]);
  const row = await queryFirst<{ others: number; own: boolean }>(
    m,
    `SELECT count(*) FILTER (WHERE idempotency_key IS DISTINCT FROM $2)::int AS others,
            bool_or(idempotency_key = $2) IS TRUE AS own
       FROM run_executions
      WHERE workspace_id = $1 AND schedule_id IS NOT NULL AND created_at > now() - interval '1 hour'`,
    [workspaceId, key],
  );
  return { others: row?.others ?? 0, own: row?.own ?? false };
}
