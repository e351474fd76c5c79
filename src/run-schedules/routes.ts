import { z } from 'zod';
import { defineRoute } from '../platform/api/route';
import { LIMITS } from '../rules/limits';
import {
  CreateRunScheduleRequest,
  RunScheduleIdParams,
  RunScheduleList,
  RunScheduleRow,
  TriggerRunScheduleResponse,
  UpdateRunScheduleRequest,
} from './schemas';
import type { RunScheduleService } from './service';

const tags = ['run-schedules'];
const scope = 'schedules:manage' as const;
const notFound = { 404: 'No such run schedule in this workspace' };
const needsRunsWrite = 'Missing runs:write, which anything that makes the schedule dispatch needs as well';
/** NM-3: the kept run then acts as the caller, so the caller must hold what its steps need. */
const needsKeptScopes = `${needsRunsWrite}; or a scope the schedule's kept run needs (its runs act as the caller)`;

const PauseRequest = z
  .object({ note: z.string().max(LIMITS.schedules.noteChars).optional() })
  .strict()
  .meta({ id: 'PauseRunScheduleRequest' });

export const runScheduleRoutes = (schedules: RunScheduleService) => [
  defineRoute({
    method: 'post',
    path: '/v1/run-schedules',
    operationId: 'createRunSchedule',
    summary: 'Schedule a run: on a cron or an interval, as a Temporal Schedule',
    description:
      'Creates the schedule and its Temporal Schedule `run-schedule-<id>` (visible, and pausable, in the ' +
      'Temporal UI). Each fire dispatches `run` through the same path as `POST /v1/runs`, as this credential ' +
      '(re-checked at every fire: once it is revoked or expired, or its user left, the fire dispatches nothing, ' +
      'records why in `last_refusal` and pauses the schedule), with the idempotency key ' +
      '`schedule:<id>:<fire>` so a retried fire never dispatches twice; its runs carry `schedule_id`. A fire ' +
      'lasts as long as its run, so `overlap` applies to runs: `skip` (the default), `buffer_one`, `allow`, ' +
      '`cancel_other` (the previous run is cancelled as `POST /v1/runs/{id}/cancel` would). Exactly one of ' +
      '`cron` (read in `timezone`) and `interval`; a bad one, an unknown time zone or a run `POST /v1/runs` would ' +
      `refuse is 422. Needs \`runs:write\` as well (403 without). At most ${LIMITS.schedules.perWorkspace} per ` +
      'workspace (409). Should Temporal be unreachable, the schedule is still created (`temporal: null`) and ' +
      'its Temporal Schedule follows once Temporal answers.',
    tags,
    scope,
    body: CreateRunScheduleRequest,
    example: {
      interval: '1h',
      run: { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance', input: {} }] } },
      overlap: 'skip',
      note: 'hourly balance check',
    },
    status: 201,
    response: RunScheduleRow,
    errors: {
      400: "The run's steps need a scope this credential lacks",
      403: needsRunsWrite,
      409: 'run_schedule_limit: the workspace has as many schedules as it may',
    },
    handler: ({ auth, body }) => schedules.create(auth, body),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/run-schedules',
    operationId: 'listRunSchedules',
    summary: 'The workspace’s run schedules, newest first, each with its next fire times',
    description:
      `Each with what Temporal says of it now: paused or not, the next ${LIMITS.schedules.nextFireTimes} fire ` +
      'times, recent fires and the fires whose run is still going (`temporal`, null while unreachable).',
    tags,
    scope: 'runs:read',
    response: RunScheduleList,
    handler: ({ auth }) => schedules.list(auth),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/run-schedules/{id}',
    operationId: 'getRunSchedule',
    summary: 'One run schedule, with its next fire times',
    description: 'The schedule and what Temporal says of it now; another workspace’s is 404.',
    tags,
    scope: 'runs:read',
    params: RunScheduleIdParams,
    response: RunScheduleRow,
    errors: notFound,
    handler: ({ auth, params }) => schedules.get(auth, params.id),
  }),
  defineRoute({
    method: 'patch',
    path: '/v1/run-schedules/{id}',
    operationId: 'updateRunSchedule',
    summary: 'Change when or what a schedule runs, its overlap policy, note or paused state',
    description:
      'Giving `cron` replaces an `interval` and the other way round. Changing `cron`, `interval`, `timezone`, ' +
      '`run` or `overlap`, or `paused: false`, needs `runs:write` as well (403 without) and makes the caller ' +
      'the identity its runs act as, so the caller must hold the scopes the run needs: a `run` in the body ' +
      'lacking one is 400 (as for `POST /v1/runs`), the kept run 403. Pausing and the note need the manage ' +
      'scope alone.',
    tags,
    scope,
    params: RunScheduleIdParams,
    body: UpdateRunScheduleRequest,
    example: { cron: '0 9 * * mon-fri', timezone: 'Europe/Paris' },
    response: RunScheduleRow,
    errors: { ...notFound, 400: "The run's steps need a scope this credential lacks", 403: needsKeptScopes },
    handler: ({ auth, params, body }) => schedules.update(auth, params.id, body),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/run-schedules/{id}/pause',
    operationId: 'pauseRunSchedule',
    summary: 'Pause a schedule (in Temporal too); `note` says why',
    description: 'Fires stop until it is resumed; runs already going go on.',
    tags,
    scope,
    params: RunScheduleIdParams,
    body: PauseRequest,
    example: { note: 'paused during the migration' },
    response: RunScheduleRow,
    errors: notFound,
    handler: ({ auth, params, body }) => schedules.update(auth, params.id, { paused: true, note: body.note }),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/run-schedules/{id}/resume',
    operationId: 'resumeRunSchedule',
    summary: 'Resume a paused schedule; the caller becomes the identity its runs act as',
    description:
      'Needs `runs:write` and the scopes the schedule’s run needs as well (403 without). A note Weft wrote ' +
      'when it paused the schedule is cleared.',
    tags,
    scope,
    params: RunScheduleIdParams,
    response: RunScheduleRow,
    errors: { ...notFound, 403: needsKeptScopes },
    handler: ({ auth, params }) => schedules.update(auth, params.id, { paused: false }),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/run-schedules/{id}/trigger',
    operationId: 'triggerRunSchedule',
    summary: 'Fire a schedule now',
    description:
      'One fire now, paused or not, under the schedule’s own overlap policy; its run carries `schedule_id` ' +
      'like any other. The caller becomes the identity the schedule’s runs act as (as a resume makes it), so ' +
      'it needs `runs:write` and every scope the run’s steps need (403 without, and nothing fires).',
    tags,
    scope,
    params: RunScheduleIdParams,
    status: 202,
    response: TriggerRunScheduleResponse,
    errors: { ...notFound, 403: needsKeptScopes },
    handler: ({ auth, params }) => schedules.trigger(auth, params.id),
  }),
  defineRoute({
    method: 'delete',
    path: '/v1/run-schedules/{id}',
    operationId: 'deleteRunSchedule',
    summary: 'Delete a schedule and its Temporal Schedule',
    description:
      'The runs it dispatched stay, and keep its `schedule_id`; a fire still waiting for its run ends with it.',
    tags,
    scope,
    params: RunScheduleIdParams,
    response: RunScheduleRow,
    errors: notFound,
    handler: ({ auth, params }) => schedules.remove(auth, params.id),
  }),
];
