import { z } from 'zod';
import { Approvers } from '../approvals/rules';
import { ApprovalStatus } from '../approvals/schemas';
import { Tag } from './control-schemas';
import { RunStatus } from './schemas';

/** The wire shapes of the run event streams (issue 26): documentation of the SSE `data:` lines. */

const stepRef = {
  step_no: z.number().int(),
  step_id: z.uuid(),
  tool: z.string(),
};
const runError = z.object({ code: z.string(), message: z.string(), step: z.number().int().nullable() });

const event = <T extends string, D extends z.ZodType>(type: T, data: D, description: string) =>
  z
    .object({
      id: z.number().int().describe('Per run, from 1, increasing; the SSE `id:` of the run stream.'),
      seq: z.number().int().describe('Across the workspace, increasing; the SSE `id:` of the workspace stream.'),
      execution_id: z.uuid(),
      type: z.literal(type),
      at: z.iso.datetime({ offset: true }).describe('When the change it reports was written.'),
      data,
      audit: z
        .object({
          seq: z.number().int(),
          hash: z.string().length(64),
          link: z
            .enum(['own', 'head'])
            .describe("`own`: this event's own link of the run's chain; `head`: the chain's head when it happened."),
        })
        .nullable()
        .describe('Where the event sits in `GET /v1/runs/{execution_id}/audit`; null before the first link.'),
    })
    .describe(description);

export const RunEvent = z
  .discriminatedUnion('type', [
    event('run.status', z.object({ status: RunStatus }), 'The run moved to `status`.'),
    event('step.started', z.object(stepRef), 'A tool step started.'),
    event(
      'step.completed',
      z.object({ ...stepRef, output: z.unknown(), credits_charged: z.number().int() }),
      'A tool step succeeded, with its output and what it cost.',
    ),
    event('step.failed', z.object({ ...stepRef, error: runError.nullable() }), 'A tool step failed.'),
    event(
      'approval.requested',
      z.object({
        approval_id: z.uuid(),
        step_no: z.number().int(),
        tool: z.string(),
        input: z.unknown(),
        approvers: Approvers.optional().describe('The rule’s approvers, when it named a quorum.'),
        expires_at: z.iso.datetime({ offset: true }).optional().describe('The rule’s deadline, when it set one.'),
        subject: z.literal('budget').optional().describe('A budget approval: the step would exceed the run’s budget.'),
      }),
      'A step waits for `POST /v1/approvals/{approval_id}/resolve`.',
    ),
    event(
      'approval.voted',
      z.object({
        approval_id: z.uuid(),
        step_no: z.number().int(),
        user_id: z.uuid(),
        decision: z.enum(['APPROVED', 'REJECTED', 'RESPOND']),
      }),
      'A person voted on an approval that needs several approvers (its VOTE link).',
    ),
    event(
      'approval.escalated',
      z.object({
        approval_id: z.uuid(),
        step_no: z.number().int(),
        escalations: z.number().int(),
        approvers: Approvers.nullable(),
        expires_at: z.iso.datetime({ offset: true }).nullable(),
      }),
      'The deadline passed and escalated the approval to new approvers, with a new deadline.',
    ),
    event(
      'approval.resolved',
      z.object({
        approval_id: z.uuid(),
        step_no: z.number().int(),
        status: ApprovalStatus,
        resolved_by: z.uuid().nullable(),
        notes: z.string().nullable(),
        expired: z.literal(true).optional().describe('Its deadline decided it (`approval_expired` when rejected).'),
        subject: z.literal('budget').optional().describe('A budget approval (its rejection: `budget_exhausted`).'),
      }),
      'An approval was approved, rejected, or cancelled with its run, or its deadline decided it.',
    ),
    event(
      'decision.recorded',
      z.object({
        step_id: z.uuid(),
        step_no: z.number().int(),
        decision: z.string(),
        rationale: z.string().nullable(),
        supersedes_step_id: z.uuid().nullable(),
      }),
      '`agent.record_decision` recorded a decision.',
    ),
    event(
      'waitpoint.created',
      z.object({
        waitpoint_id: z.uuid(),
        step_no: z.number().int(),
        kind: z.enum(['sleep', 'event', 'run']),
        name: z.string().nullable(),
        expires_at: z.iso.datetime({ offset: true }).nullable(),
        awaited_execution_id: z.uuid().nullable(),
        token: z
          .string()
          .optional()
          .describe(
            'A `run.wait_for` waitpoint’s one-time completion token (`wpt_…`), shown here and in the step’s ' +
              'output only.',
          ),
      }),
      'A wait step (`run.sleep`, `run.wait_for`, `runs.wait`) made its waitpoint; the run is WAITING.',
    ),
    event(
      'waitpoint.completed',
      z.object({
        waitpoint_id: z.uuid(),
        step_no: z.number().int(),
        kind: z.enum(['sleep', 'event', 'run']),
        name: z.string().nullable(),
        status: z.enum(['completed', 'timed_out']),
        output: z.unknown(),
        completed_at: z.iso.datetime({ offset: true }).nullable(),
      }),
      'The waitpoint was completed (its output), its sleep ended, its awaited run finished, or it timed out.',
    ),
    event(
      'run.finished',
      z.object({
        status: RunStatus,
        output: z.unknown(),
        error: runError.nullable(),
        credits_charged: z.number().int(),
      }),
      'The run ended; the run stream closes after it.',
    ),
  ])
  .meta({ id: 'RunEvent' });
export type RunEvent = z.infer<typeof RunEvent>;

export const RunEventsHeaders = z.object({
  'Last-Event-ID': z
    .string()
    .regex(/^\d{1,15}$/)
    .optional()
    .describe('Resume after this event id (what the SSE client saw last); the replay starts after it.'),
});

export const RunEventsQuery = z.object({
  format: z
    .enum(['weft', 'ag-ui'])
    .default('weft')
    .describe(
      '`weft`: `RunEvent`s; `ag-ui`: the same events as AG-UI events (`AgUiEvent`, as `POST /v1/ag-ui` streams them).',
    ),
});

export const WorkspaceEventsQuery = z.object({
  status: RunStatus.optional().describe('Only events of runs in this status when the event is read.'),
  agent: z.enum(['playbook', 'llm']).optional(),
  tag: Tag.optional().describe('Only events of runs carrying this tag.'),
});
export type WorkspaceEventsQuery = z.output<typeof WorkspaceEventsQuery>;
