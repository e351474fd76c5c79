import type { Context } from 'koa';
import type { EventStreams } from '../platform/api/sse';
import type { Principal } from '../platform/auth/principal';
import { ForbiddenError } from '../platform/errors';
import type { RunEventStreams, RunStreamFormat } from '../runs/event-stream';
import { DispatchRunRequest } from '../runs/schemas';
import { RUN_SCOPES } from '../runs/scopes';
import type { RunService } from '../runs/service';
import { THREAD_TAG } from './format';
import type { AgUiRunRequest } from './schemas';
import { goalOf } from './schemas';

/**
 * The AG-UI agent (issue 42 item 3): a RunAgentInput starts an `llm` run whose goal is the last user
 * message, and the response follows that run's event log in AG-UI's words until it finishes. The
 * run is durable: the same `runId` again (say after a dropped connection, with Last-Event-ID) follows
 * the run it started, and `GET /v1/runs/{execution_id}/events?format=ag-ui` tells the same story.
 */
export function createAgUiAgent(deps: {
  runs: Pick<RunService, 'dispatch'>;
  events: Pick<RunEventStreams, 'followRun'>;
  streams: Pick<EventStreams, 'admit'>;
  format: RunStreamFormat;
}) {
  return {
    async run(ctx: Context, principal: Principal, input: AgUiRunRequest): Promise<void> {
      // Starting needs runs:write (the route's scope); following what it started needs runs:read too.
      if (!principal.scopes.has(RUN_SCOPES.read)) throw new ForbiddenError(`Missing scope ${RUN_SCOPES.read}`);
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
      // The stream's place first: a refused stream (429) dispatches nothing.
      const admission = deps.streams.admit(principal);
      let executionId: string;
      try {
        executionId = (await deps.runs.dispatch(principal, body)).execution_id;
      } catch (error) {
        admission.release();
        throw error;
      }
      await deps.events.followRun(ctx, principal, executionId, { format: deps.format, admission });
    },
  };
}

export type AgUiAgent = ReturnType<typeof createAgUiAgent>;
