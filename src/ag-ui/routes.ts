import { defineRoute } from '../platform/api/route';
import { TOO_MANY_STREAMS } from '../platform/api/sse';
import { LIMITS } from '../rules/limits';
import { RunEventsHeaders } from '../runs/event-schemas';
import { RUN_SCOPES } from '../runs/scopes';
import type { AgUiAgent } from './agent';
import { AgUiEvent, AgUiRunRequest } from './schemas';

export const agUiRoutes = (agent: AgUiAgent) => [
  defineRoute({
    method: 'post',
    path: '/v1/ag-ui',
    operationId: 'runAgUiAgent',
    summary: 'Run the llm agent for an AG-UI client: a RunAgentInput in, AG-UI events out (SSE)',
    description:
      'AG-UI (protocol 1.0) over Weft’s durable runs. The body is a RunAgentInput, checked with `@ag-ui/core`’s ' +
      'schema (422 with each issue’s `loc`); the text of its last `user` message (at most ' +
      `${LIMITS.runs.llm.goalChars} characters) becomes the goal of an \`llm\` run, tagged \`ag-ui\` and ` +
      '`ag-ui-thread:<threadId>`, dispatched with the idempotency key `ag-ui:<runId>`. The answer is that ' +
      'run’s event log as AG-UI events, encoded by `@ag-ui/encoder`: `RUN_STARTED` (its `runId` is the ' +
      '`execution_id`), per tool step `STEP_STARTED`, `TOOL_CALL_START`/`ARGS`/`END`, `TOOL_CALL_RESULT`, ' +
      '`STEP_FINISHED`; approvals, waitpoints, decisions and status changes as `CUSTOM` events named ' +
      '`weft.<run event type>` (`weft.approval_requested` carries the `approval_id` to resolve); the answer as ' +
      '`TEXT_MESSAGE_START`/`CONTENT`/`END`; then `RUN_FINISHED` (`outcome: {type: "cancelled"}` for a ' +
      'cancelled run) or `RUN_ERROR` (a failed run: its error `code`). The last `data:` line of each run event ' +
      'carries its `id:`: the same request again with `Last-Event-ID` resumes the same run’s stream, and ' +
      '`GET /v1/runs/{execution_id}/events?format=ag-ui` follows it from anywhere. The stream re-checks its ' +
      'credential like every run stream (a lapse ends it with `RUN_ERROR`, `code` `credential_revoked`, ' +
      '`credential_expired` or `member_removed`) and, after its lifetime, ends with `CUSTOM` `weft.reconnect` ' +
      '`{detail, last_event_id}`. `tools`, `context`, `state` and earlier messages are accepted and not read; ' +
      '`forwardedProps` may set `approval` and `max_steps`.',
    tags: ['ag-ui'],
    scope: RUN_SCOPES.dispatch,
    body: AgUiRunRequest,
    example: {
      threadId: 'thread-1',
      runId: 'run-1',
      messages: [{ id: 'm1', role: 'user', content: 'remember that the billing module owns invoices' }],
      tools: [],
      context: [],
      state: {},
    },
    headers: RunEventsHeaders,
    produces: { 'text/event-stream': AgUiEvent },
    errors: {
      400: 'Last-Event-ID is not an event id',
      403: 'The credential lacks `runs:write`, or `runs:read` to follow the run',
      409: 'idempotency_key_reused: this runId was used with another request',
      429: TOO_MANY_STREAMS,
    },
    handler: ({ auth, body, ctx }) => agent.run(ctx, auth, body),
  }),
];
