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
    summary: 'Run the llm agent for an AG-UI client: start, resume (answer an interrupt) or cancel; AG-UI events out',
    description:
      'AG-UI (protocol 1.0) over Weft’s durable runs. The body is a RunAgentInput, checked with `@ag-ui/core`’s ' +
      'schema (422 with each issue’s `loc`). **Start**: the text of its last `user` message (at most ' +
      `${LIMITS.runs.llm.goalChars} characters) becomes the goal of an \`llm\` run, tagged \`ag-ui\` and ` +
      '`ag-ui-thread:<threadId>`, dispatched with the idempotency key `ag-ui:<runId>`. The answer is that ' +
      'run’s event log as AG-UI events, encoded by `@ag-ui/encoder`: `RUN_STARTED` (its `runId` is the ' +
      '`execution_id`), per tool step `STEP_STARTED`, `TOOL_CALL_START`/`ARGS`/`END`, `TOOL_CALL_RESULT`, ' +
      '`STEP_FINISHED`; approvals, waitpoints, decisions and status changes as `CUSTOM` events named ' +
      '`weft.<run event type>`; the answer as `TEXT_MESSAGE_START`/`CONTENT`/`END`; then `RUN_FINISHED` ' +
      '(`outcome: {type: "cancelled"}` for a cancelled run) or `RUN_ERROR` (a failed run: its error `code`). ' +
      '**Interrupts**: when the run asks for a person (an approval, or a `run.wait_for` waitpoint) the AG-UI ' +
      'run ends after its `CUSTOM` event with `RUN_FINISHED` `outcome: {type: "interrupt", interrupts}`: each ' +
      'interrupt’s `id` is the approval’s or waitpoint’s id, `reason` `weft.approval` or `weft.waitpoint`, ' +
      'with `responseSchema`, `expiresAt` and `metadata` (`execution_id`, `step_no`, `tool`, `input`); the ' +
      'Weft run waits, durably (`forwardedProps.interrupts: false` streams on through it instead). **Resume**: ' +
      'the next RunAgentInput of the thread (`threadId` as before, or the `execution_id`) carries `resume`: ' +
      'an approval’s `resolved` payload `{decision: "approve"|"reject"|"respond", notes?, input?, message?, ' +
      'edits?}` resolves it as `POST /v1/approvals/{approval_id}/resolve` would (scope `approvals:write`, ' +
      'which MCP tokens never hold; the dispatching credential and, as the approval policy says, its user are ' +
      'refused), a waitpoint’s payload is its output (checked against its `output_schema`), `cancelled` sets ' +
      'one aside; the stream is a new AG-UI run (`RUN_STARTED`) of the same Weft run from where it asked. ' +
      '**Cancel**: `forwardedProps: {command: "cancel"}` cancels the thread’s run (the one `resume` names, ' +
      'else its newest unfinished one) and streams its end. The last `data:` line of each run event ' +
      'carries its `id:`: the same request again with `Last-Event-ID` resumes the same stream, and ' +
      '`GET /v1/runs/{execution_id}/events?format=ag-ui` follows it from anywhere (without interrupts). The ' +
      'stream re-checks its credential like every run stream (a lapse ends it with `RUN_ERROR`, `code` ' +
      '`credential_revoked`, `credential_expired` or `member_removed`) and, after its lifetime, ends with ' +
      '`CUSTOM` `weft.reconnect` `{detail, last_event_id}`. `tools`, `context`, `state` and earlier messages ' +
      'are accepted and not read; `forwardedProps` may set `approval` and `max_steps`.',
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
      403:
        'The credential lacks `runs:write`, `runs:read` to follow the run, or `approvals:write` to answer an ' +
        'approval; or the separation of duties refuses it (approval_by_dispatcher, approval_by_dispatching_user, ' +
        'not_an_approver), as on `POST /v1/approvals/{approval_id}/resolve`',
      404:
        'interrupt_not_found (a resume names no approval or waitpoint of the thread’s runs, or another ' +
        'workspace’s), or run_not_found (a cancel in a thread without runs)',
      409:
        'idempotency_key_reused (this runId was used with another request); an approval or waitpoint no longer ' +
        'open (answered already, expired, its run finished); a cancel of a run that finished otherwise',
      422: 'The RunAgentInput, or a resume payload (`loc` under `body.resume.<n>.payload`), is refused',
      429: TOO_MANY_STREAMS,
    },
    handler: ({ auth, body, ctx }) => agent.run(ctx, auth, body),
  }),
];
