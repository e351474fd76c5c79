import { z } from 'zod';
import { defineCapability } from '../capabilities/define';
import { scopeOf } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { NotFoundError, ValidationFailedError } from '../platform/errors';
import { LIMITS } from '../rules/limits';
import * as executionRepo from './execution-repository';
import { RunStatus } from './schemas';
import { beginWait, runOutcomeOf as outcomeOf, schemaProblem } from './waitpoints';

const { maxSeconds, nameChars } = LIMITS.runs.waits;
const Seconds = z
  .number()
  .int()
  .min(1)
  .max(maxSeconds)
  .describe(`1 s to ${maxSeconds / 86_400} days.`);
const WaitStatus = z.enum(['waiting', 'completed', 'timed_out', 'cancelled']);
const runOnly = 'run_only_tool: called outside a run (this tool is a step of a run only)';

/** A run's outcome, as `GET /v1/runs/{execution_id}` shows it. */
const RunOutcome = z.object({
  execution_id: z.uuid(),
  status: RunStatus,
  output: z.unknown().describe('The run’s output: the last step’s, or the llm agent’s `{answer}`; null until it ends.'),
  error: z.object({ code: z.string(), message: z.string(), step: z.number().int().nullable() }).nullable(),
  credits_charged: z.number().int(),
  finished_at: z.iso.datetime({ offset: true }).nullable(),
  waitpoint_id: z
    .uuid()
    .nullable()
    .describe('Inside a run: the waitpoint the step waits on (completed when the run finishes); null outside.'),
});

/**
 * Durable waits as steps (issue 40 item 3): `run.sleep`, `run.wait_for` and `runs.wait`. Inside a run
 * each makes its step's waitpoint and the run waits in status WAITING (workflows/run-waits.ts); the
 * step's output while it waits is what the tool answered, and once the wait is over, the outcome.
 * Free. Their calls store nothing under an Idempotency-Key (a token is never stored but as a hash):
 * a run's retried step finds its waitpoint by the step instead.
 */
export const waitCapabilities = (deps: { uow: UnitOfWork }) => [
  defineCapability({
    name: 'run.sleep',
    access: 'read',
    description:
      'Inside a run: pauses the run (WAITING) for `seconds` on a durable timer, then goes on; its output is then ' +
      '`{status: "completed", woke_at}`. Outside a run: 422 `run_only_tool`',
    input: z.strictObject({ seconds: Seconds }),
    output: z.object({
      waitpoint_id: z.uuid(),
      status: WaitStatus,
      wake_at: z.iso.datetime({ offset: true }),
      woke_at: z.iso.datetime({ offset: true }).nullable().optional(),
    }),
    example: { seconds: 3600 },
    errors: { 422: runOnly },
    handler: async (call, input) => {
      const { waitpoint } = await beginWait(deps.uow, call, 'run.sleep', { kind: 'sleep', seconds: input.seconds });
      return { waitpoint_id: waitpoint.id, status: waitpoint.status, wake_at: waitpoint.expires_at!.toISOString() };
    },
  }),
  defineCapability({
    name: 'run.wait_for',
    access: 'read',
    description:
      'Inside a run: makes a waitpoint and pauses the run (WAITING) until ' +
      '`POST /v1/waitpoints/{waitpoint_id}/complete` ' +
      '`{output}` completes it, with a key holding runs:write or with the one-time `token` (`Authorization: Bearer ' +
      'wpt_…`, shown only here and in the `waitpoint.created` event). An output failing `output_schema` (JSON ' +
      'Schema) is refused with 422; once completed, the step’s output carries `output` (and `token` is null). Not ' +
      'completed within `timeout_seconds`: the step fails with `waitpoint_timeout`. ' +
      'Outside a run: 422 `run_only_tool`',
    input: z.strictObject({
      name: z.string().trim().min(1).max(nameChars).describe('What the run waits for, as the waitpoint list shows it.'),
      timeout_seconds: Seconds,
      output_schema: z
        .record(z.string(), z.unknown())
        .optional()
        .describe('A JSON Schema the completion’s `output` must satisfy.'),
    }),
    output: z.object({
      waitpoint_id: z.uuid(),
      name: z.string(),
      status: WaitStatus,
      token: z
        .string()
        .nullable()
        .describe('The one-time completion token (`wpt_…`), while the run waits; never shown again.'),
      expires_at: z.iso.datetime({ offset: true }),
      output: z.unknown().optional().describe('The completion’s output, once completed.'),
      completed_at: z.iso.datetime({ offset: true }).nullable().optional(),
    }),
    example: { name: 'invoice approved in ERP', timeout_seconds: 86_400, output_schema: { type: 'object' } },
    errors: { 422: `${runOnly}; or an output_schema that is not a JSON Schema` },
    handler: async (call, input) => {
      const problem = input.output_schema ? schemaProblem(input.output_schema) : null;
      if (problem) {
        throw new ValidationFailedError([{ loc: ['body', 'output_schema'], msg: problem, type: 'value_error' }]);
      }
      const { waitpoint, token } = await beginWait(deps.uow, call, 'run.wait_for', {
        kind: 'event',
        name: input.name,
        seconds: input.timeout_seconds,
        outputSchema: input.output_schema,
      });
      return {
        waitpoint_id: waitpoint.id,
        name: waitpoint.name ?? input.name,
        status: waitpoint.status,
        token,
        expires_at: waitpoint.expires_at!.toISOString(),
      };
    },
  }),
  defineCapability({
    name: 'runs.wait',
    access: 'read',
    description:
      'Inside a run: a durable wait for another run of the workspace to finish; the step’s output is then that ' +
      'run’s outcome (status, output, error). Outside a run: that run’s state at once',
    input: z.strictObject({ execution_id: z.uuid() }),
    output: RunOutcome,
    example: { execution_id: '7a1c2b9e-4d3f-4b8a-9c6e-2f1d0e9b8a7c' },
    errors: { 404: 'run_not_found: no such run in the workspace', 422: 'A run cannot wait for itself' },
    handler: async (call, input) => {
      if (!call.runId) {
        const run = await deps.uow(scopeOf(call.principal), (m) => executionRepo.findExecution(m, input.execution_id));
        if (!run) throw new NotFoundError({ error: 'run_not_found', execution_id: input.execution_id });
        return { ...outcomeOf(run), waitpoint_id: null };
      }
      const { waitpoint, run } = await beginWait(deps.uow, call, 'runs.wait', {
        kind: 'run',
        awaited: input.execution_id,
      });
      return { ...outcomeOf(run!), waitpoint_id: waitpoint.id };
    },
  }),
];
