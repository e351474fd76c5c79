import type { Context } from 'koa';
import type { ApprovalService } from '../approvals/service';
import type { EventStreams } from '../platform/api/sse';
import { standingScopeOf } from '../platform/auth/credential-liveness';
import type { Principal } from '../platform/auth/principal';
import type { ScopedRead } from '../platform/db/unit-of-work';
import { ForbiddenError, NotFoundError, ValidationFailedError } from '../platform/errors';
import type { RunEventStreams } from '../runs/event-stream';
import { DispatchRunRequest } from '../runs/schemas';
import { RUN_SCOPES } from '../runs/scopes';
import type { RunService } from '../runs/service';
import type { WaitpointService } from '../runs/waitpoints';
import type { AgUiStreamOptions } from './format';
import { createAgUiFormat, THREAD_TAG } from './format';
import { findAsked, resolveBodyOf } from './interrupts';
import type { AgUiRunRequest } from './schemas';
import { goalOf } from './schemas';

/** Where a request's stream starts: the run, the cursor it starts after, and how it is told. */
interface StreamPlan {
  executionId: string;
  after?: number;
  options: AgUiStreamOptions;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The AG-UI agent (issue 42 item 3): a RunAgentInput starts an `llm` run whose goal is the last user
 * message, and the response follows that run's event log in AG-UI's words until it finishes or asks
 * for a person: an open approval or `run.wait_for` waitpoint ends the AG-UI run with RUN_FINISHED
 * `outcome: interrupt` (the Weft run waits, durably). The next RunAgentInput of the thread answers with
 * `resume` (the approval resolved as `POST /v1/approvals/{id}/resolve` would, the waitpoint completed)
 * and its stream is the rest of the same Weft run; `forwardedProps: {command: "cancel"}` cancels the
 * thread's run and streams its end. The same `runId` again (a dropped connection) follows the run it
 * started, and `GET /v1/runs/{execution_id}/events?format=ag-ui` tells the same story, without interrupts.
 */
export function createAgUiAgent(deps: {
  runs: Pick<RunService, 'dispatch' | 'cancel'>;
  approvals: Pick<ApprovalService, 'resolve'>;
  waitpoints: Pick<WaitpointService, 'complete'>;
  events: Pick<RunEventStreams, 'followRun'>;
  streams: Pick<EventStreams, 'admit'>;
  read: ScopedRead;
}) {
  const { read } = deps;

  /** A new llm run for the last user message (or the run this `runId` started before). */
  async function start(principal: Principal, input: AgUiRunRequest): Promise<StreamPlan> {
    const props = input.forwardedProps ?? {};
    const body = DispatchRunRequest.parse({
      agent: 'llm',
      input: {
        goal: goalOf(input.messages)!.text,
        ...(props.approval ? { approval: props.approval } : {}),
        ...(props.max_steps ? { max_steps: props.max_steps } : {}),
      },
      idempotency_key: `ag-ui:${input.runId}`,
      tags: ['ag-ui', `${THREAD_TAG}${input.threadId}`],
    });
    const { execution_id } = await deps.runs.dispatch(principal, body);
    // `interrupts: false` keeps the stream going through approvals (CUSTOM events only), as before interrupts.
    return {
      executionId: execution_id,
      options: props.interrupts === false ? {} : { interrupts: { skip: new Set() } },
    };
  }

  /**
   * Answers the interrupts `resume` names, each as its own door would (an approval needs
   * `approvals:write` and the separation of duties holds; a waitpoint's output meets its schema),
   * then follows the same run from where its log asked: entries `cancelled` are set aside (left to
   * another person or door), and no answered one interrupts the stream again.
   */
  async function resume(principal: Principal, input: AgUiRunRequest): Promise<StreamPlan> {
    const asked = await findAsked(read, standingScopeOf(principal), threadOf(input), input.resume!);
    const answers = asked
      .filter((one) => one.entry.status === 'resolved')
      .map((one) => ({ one, body: one.kind === 'approval' ? resolveBodyOf(one.entry.payload, one.at) : undefined }));
    if (answers.some(({ one }) => one.kind === 'approval') && !principal.scopes.has('approvals:write')) {
      throw new ForbiddenError('Missing scope approvals:write');
    }
    for (const { one, body } of answers) {
      if (body) await deps.approvals.resolve(principal, one.id, body);
      else await deps.waitpoints.complete(principal, one.id, one.entry.payload ?? null);
    }
    return {
      executionId: asked[0]!.executionId,
      after: Math.min(...asked.map((one) => one.eventId)),
      options: { announce: true, interrupts: { skip: new Set(asked.map((one) => one.id)) } },
    };
  }

  /** Cancels the thread's run (the one `resume` names, else its newest unfinished) and streams its end. */
  async function cancel(principal: Principal, input: AgUiRunRequest): Promise<StreamPlan> {
    const scope = standingScopeOf(principal);
    let target: string | undefined;
    if (input.resume?.length) {
      const answered = input.resume.findIndex((entry) => entry.status !== 'cancelled');
      if (answered >= 0) {
        const msg = 'A cancel answers no interrupt: its resume entries are `cancelled`';
        throw new ValidationFailedError([{ loc: ['body', 'resume', answered, 'status'], msg, type: 'value_error' }]);
      }
      target = (await findAsked(read, scope, threadOf(input), input.resume))[0]!.executionId;
    } else {
      const thread = threadOf(input);
      const uuid = UUID.test(thread.threadId);
      const [newest] = await read<{ id: string }>(
        scope,
        `SELECT id FROM run_executions
         WHERE ${uuid ? '(id = $2::uuid OR $1 = ANY (tags))' : '$1 = ANY (tags)'}
         ORDER BY status IN ('SUCCEEDED', 'FAILED', 'CANCELLED'), created_at DESC, id LIMIT 1`,
        uuid ? [thread.tag, thread.threadId] : [thread.tag],
      );
      target = newest?.id;
    }
    if (!target) throw new NotFoundError({ error: 'run_not_found', thread_id: input.threadId });
    // The stream starts at the cancel: what the run logged before it (a finished run: its end again).
    const [{ last }] = (await read<{ last: number }>(
      scope,
      `SELECT coalesce(max(id) FILTER (WHERE type <> 'run.finished'), 0) AS last FROM run_events
       WHERE execution_id = $1::uuid`,
      [target],
    )) as [{ last: number }];
    await deps.runs.cancel(principal, target);
    return { executionId: target, after: Number(last), options: { announce: true } };
  }

  return {
    async run(ctx: Context, principal: Principal, input: AgUiRunRequest): Promise<void> {
      // Starting needs runs:write (the route's scope); following what it started needs runs:read too.
      if (!principal.scopes.has(RUN_SCOPES.read)) throw new ForbiddenError(`Missing scope ${RUN_SCOPES.read}`);
      // The stream's place first: a refused stream (429) dispatches, answers and cancels nothing.
      const admission = deps.streams.admit(principal);
      let plan: StreamPlan;
      try {
        plan =
          input.forwardedProps?.command === 'cancel'
            ? await cancel(principal, input)
            : input.resume?.length
              ? await resume(principal, input)
              : await start(principal, input);
      } catch (error) {
        admission.release();
        throw error;
      }
      await deps.events.followRun(ctx, principal, plan.executionId, {
        format: createAgUiFormat({ read }, plan.options),
        admission,
        ...(plan.after !== undefined ? { after: plan.after } : {}),
      });
    },
  };
}

/** A thread's runs: those tagged `ag-ui-thread:<threadId>`, and the run whose id the thread is. */
const threadOf = (input: AgUiRunRequest) => ({ threadId: input.threadId, tag: `${THREAD_TAG}${input.threadId}` });

export type AgUiAgent = ReturnType<typeof createAgUiAgent>;
