import { defineRoute, RouteAnswer } from '../platform/api/route';
import { TOO_MANY_STREAMS } from '../platform/api/sse';
import { LIMITS } from '../rules/limits';
import { RerunRequest } from './control-schemas';
import { DispatchQuery, RunEstimateResponse } from './estimate-schemas';
import { RunEvent, RunEventsHeaders, RunEventsQuery, WorkspaceEventsQuery } from './event-schemas';
import type { RunEventStreams, RunStreamFormat } from './event-stream';
import {
  DispatchRunRequest,
  DispatchRunResponse,
  ExecutionIdParams,
  RunAudit,
  RunDetail,
  RunList,
  RunListQuery,
  RunSummary,
} from './schemas';
import { RUN_SCOPES } from './scopes';
import type { RunService } from './service';

const runNotFound = 'Unknown execution, or one of another workspace';
const concurrencyRefused =
  'concurrency_limit: `policy: reject` and `limit` runs with the key are active; `execution_ids` lists them';

const eventStreamDescription =
  'Server-sent events: each event has `id:` (see below), `event:` (its type) and `data:` (a `RunEvent`). ' +
  'Every event is written in the transaction of the change it reports and carries the audit-chain link it ' +
  "corresponds to (or the chain's head when it happened). A comment is sent every " +
  `${LIMITS.runs.events.keepAliveSeconds} s ` +
  'to keep the connection open. Live delivery is pushed from Postgres LISTEN/NOTIFY, not polled. The stream ' +
  `re-checks its credential with every read and at least every ${LIMITS.streams.credentialRecheckSeconds} s: ` +
  'once it is revoked or expired, or its user left the workspace, the stream ends with `event: error`, ' +
  '`data: {status: 401, detail, error_code}` (`credential_revoked`, `credential_expired`, `member_removed`). ' +
  `After ${LIMITS.streams.maxLifetimeSeconds / 3600} h it ends with \`event: reconnect\`, ` +
  '`data: {detail, last_event_id}`, whose `id:` is the `Last-Event-ID` to resume from: nothing is lost.';

/** The run stream's other formats, by their `?format=` name (AG-UI's comes from src/ag-ui, which depends on runs). */
export type RunStreamFormats = { 'ag-ui': RunStreamFormat };

export const runRoutes = (runs: RunService, events: RunEventStreams, formats: RunStreamFormats) => [
  // Before /v1/runs/{execution_id}, which would otherwise take `events` for an id.
  defineRoute({
    method: 'get',
    path: '/v1/runs/events',
    operationId: 'followWorkspaceRuns',
    summary: 'Every run’s events in the workspace, live (SSE)',
    description:
      `${eventStreamDescription} Starts live from now; \`Last-Event-ID\` (the \`seq\` the client saw last) ` +
      'replays what came after it first. `status`, `agent` and `tag` keep the events of runs in that status ' +
      '(when the event is read), of that agent or carrying that tag. The stream does not end by itself before ' +
      'its lifetime.',
    tags: ['runs'],
    scope: 'runs:read',
    query: WorkspaceEventsQuery,
    headers: RunEventsHeaders,
    produces: { 'text/event-stream': RunEvent },
    errors: { 429: TOO_MANY_STREAMS },
    handler: ({ auth, query, ctx }) => events.followWorkspace(ctx, auth, query),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/runs',
    operationId: 'dispatchRun',
    summary: 'Dispatch a run: a playbook of capability steps, or a goal for the model, as a durable workflow',
    description:
      'Creates an execution and starts its workflow `run-<execution_id>`; answers at once with status QUEUED. ' +
      'Every step is checked first: an unknown tool or an input its tool refuses is a 422 whose `loc` points ' +
      `into the step (\`body.input.steps.2.input.query\`). At most ${LIMITS.runs.maxSteps} steps. A step with ` +
      '`requires_approval` waits for `POST /v1/approvals/{approval_id}/resolve`. Steps are charged what their ' +
      'capability costs when they run; a playbook whose priced steps cost more than the balance is refused at ' +
      'dispatch (402 with its `estimate`), and `?dry_run=true` answers that estimate (200) without dispatching. ' +
      'A `runs.dispatch` step starts a child run, acting as this run’s ' +
      'credential (`parent_execution_id`, `root_execution_id`, `GET /v1/runs?parent=`), at most ' +
      `${LIMITS.runs.maxDepth} levels below its root (deeper fails the step: 422 \`run_depth_exceeded\`). ` +
      '`idempotency_key` is per workspace: a repeat answers the earlier ' +
      'execution with `was_duplicate: true` and starts nothing; the same key with another body is a 409. ' +
      '`tags` label the run (`GET /v1/runs?tag=`, Temporal’s `WeftTags`). `concurrency: {key, limit, policy}` bounds ' +
      'the active runs of a key: `reject` (409), `enqueue` (QUEUED with `queued_reason: concurrency_limit` until a ' +
      'slot frees, in dispatch order) or `cancel_previous` (the oldest active run is cancelled). ' +
      '`flow` (issue 43): `throttle: {key, limit, period_seconds}` lets at most `limit` runs of a key start per ' +
      'period, the rest QUEUED (`queued_reason: throttled`) and started in order; `rate_limit: {key, limit, ' +
      'period_seconds}` refuses a dispatch over the limit (429 `run_rate_limited` with `Retry-After`); ' +
      '`debounce: {key, period_seconds}` collapses dispatches with the key into one run that starts ' +
      '`period_seconds` after the last, with the last input (each later dispatch answers its `execution_id` with ' +
      '`debounced: true`). A knob takes `key_expression`, a JMESPath expression over the run’s input, instead of ' +
      '`key`. ' +
      '`agent: "llm"` takes `{goal, max_steps?, approval?}` instead: the model chooses tools (up to ' +
      `${LIMITS.runs.llm.maxSteps} calls, default ${LIMITS.runs.llm.defaultMaxSteps}), its calls wait for approval ` +
      'by `approval` (`writes`, the default; `all`; `none`), and its final answer is the run’s output. The model ' +
      'is chat-completions tool calling when the server has an OpenAI key (the tools offered under wire names, ' +
      '`ontology.search` → `ontology_search`), else a local deterministic planner; a call of an unknown tool or ' +
      'with a refused input is a failed step fed back to the model, and a model that fails ends the run FAILED ' +
      '(`upstream_unavailable`).',
    tags: ['runs'],
    scope: RUN_SCOPES.dispatch,
    status: 202,
    body: DispatchRunRequest,
    example: {
      agent: 'playbook',
      input: {
        steps: [
          { tool: 'billing.credits_balance', input: {} },
          { tool: 'ontology.search', input: { query: 'billing module' }, requires_approval: true },
        ],
      },
      idempotency_key: 'nightly-review-2026-11-23',
    },
    query: DispatchQuery,
    response: DispatchRunResponse,
    errors: {
      200: {
        description: '`?dry_run=true`: the checks passed; the estimate, nothing dispatched',
        body: RunEstimateResponse,
      },
      400: "The credential lacks a scope one of the steps' tools needs",
      402: 'The balance cannot pay the playbook’s priced steps (`estimate` in the body); nothing was dispatched',
      409: `idempotency_key_reused: this idempotency_key was used with another request body; or ${concurrencyRefused}`,
      429:
        '`run_rate_limited`: the `flow.rate_limit` key had `limit` dispatches in the last period; ' +
        'retry after `Retry-After`',
    },
    // The run and its stored principal are written in one unit of work, which awaits the credential's proof:
    // a dispatch may start from a remembered principal (issue 27); the workflow starts after that commit.
    recallable: true,
    handler: async ({ auth, body, query }) =>
      query.dry_run ? new RouteAnswer(200, await runs.estimate(auth, body)) : runs.dispatch(auth, body),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/runs/{execution_id}/rerun',
    operationId: 'rerunRun',
    summary: 'Re-run a finished run from a step, reusing the results before it',
    description:
      'Dispatches a new run (as the caller, with the earlier run’s tags and concurrency key) whose `rerun_of` names ' +
      'the earlier one. Steps before `from_step` are copied with their recorded outputs (SUCCEEDED, ' +
      '`reused_from_step_id` set, no tool call, no charge). A playbook’s other steps run again with the inputs ' +
      'they ran with, or those `input_overrides` gives by step number (checked against the tool’s schema, 422); ' +
      'an llm run’s model is asked again from `from_step`, with the reused steps as the results it has seen, and ' +
      'chooses its next steps afresh. The new audit chain’s first link (kind RERUN) names the earlier chain’s ' +
      'head hash; `GET …/audit` shows the `lineage`.',
    tags: ['runs'],
    scope: 'runs:write',
    status: 202,
    params: ExecutionIdParams,
    body: RerunRequest,
    example: { from_step: 1, input_overrides: { '1': { query: 'billing module v2' } } },
    response: DispatchRunResponse,
    errors: {
      400: "The credential lacks a scope one of the re-executed steps' tools needs",
      404: runNotFound,
      409: `run_unfinished: the run has not finished; or ${concurrencyRefused}`,
    },
    handler: ({ auth, params, body }) => runs.rerun(auth, params.execution_id, body),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/runs',
    reads: 'standby',
    operationId: 'listRuns',
    summary: 'Runs of the workspace, newest first, cursor-paged',
    description:
      'Filters by `status`, `agent`, `tag` (repeatable: runs carrying every tag given), `schedule_id` and ' +
      '`parent` (the child runs a run’s `runs.dispatch` steps started); ' +
      `\`limit\` up to ${LIMITS.runs.list.max} ` +
      `(default ${LIMITS.runs.list.default}); pass \`next_cursor\` as \`cursor\` for older runs.`,
    tags: ['runs'],
    scope: RUN_SCOPES.read,
    query: RunListQuery,
    response: RunList,
    handler: ({ auth, query }) => runs.list(auth, query),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/runs/{execution_id}',
    reads: 'standby',
    operationId: 'getRun',
    summary: 'One run with its steps and approvals',
    description:
      'The run, its input and output (the last step’s result), every step (tool, input, output, status, ' +
      'credits charged, timings), its approvals, its error (`{code, message, step}`) and the credits charged. ' +
      'A run a step started (`runs.dispatch`) names its `parent_execution_id` and `root_execution_id`.',
    tags: ['runs'],
    scope: RUN_SCOPES.read,
    params: ExecutionIdParams,
    response: RunDetail,
    errors: { 404: runNotFound },
    handler: ({ auth, params }) => runs.get(auth, params.execution_id),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/runs/{execution_id}/events',
    reads: 'standby',
    operationId: 'followRun',
    summary: 'The run’s events: replayed, then live, until `run.finished` (SSE)',
    description:
      `${eventStreamDescription} The SSE \`id:\` is the event's \`id\`, increasing from 1 per run. The stream ` +
      'first replays everything the run has recorded (after `Last-Event-ID` when given), then follows live, and ' +
      'ends after `run.finished`: a client that connects late misses nothing. Types: `run.status`, ' +
      '`step.started`, `step.completed` (output and credits), `step.failed`, `approval.requested`, ' +
      '`approval.resolved` (with `expired: true` when its deadline decided it), `approval.voted`, ' +
      '`approval.escalated`, `decision.recorded`, `run.finished`. `?format=ag-ui` sends the same events as ' +
      'AG-UI events (`AgUiEvent`), as `POST /v1/ag-ui` does: the `data:` lines `@ag-ui/core`’s EventSchemas ' +
      'parse, each run event’s last one with its `id:`.',
    tags: ['runs'],
    scope: 'runs:read',
    params: ExecutionIdParams,
    query: RunEventsQuery,
    headers: RunEventsHeaders,
    produces: { 'text/event-stream': RunEvent },
    errors: { 400: 'Last-Event-ID is not an event id', 404: runNotFound, 429: TOO_MANY_STREAMS },
    handler: ({ auth, params, query, ctx }) =>
      events.followRun(
        ctx,
        auth,
        params.execution_id,
        query.format === 'weft' ? {} : { format: formats[query.format] },
      ),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/runs/{execution_id}/audit',
    reads: 'standby',
    operationId: 'getRunAudit',
    summary: 'The run’s hash chain, verified',
    description:
      'Every finished tool step, resolved approval and recorded decision of the run, in order, each link ' +
      '`hash = sha256(prev_hash ‖ canonical JSON of its entry)` with the entry recomputed from its row now; ' +
      '`valid` is false, and `first_invalid_seq` names the first broken link, when a row was altered.',
    tags: ['runs'],
    scope: 'runs:read',
    params: ExecutionIdParams,
    response: RunAudit,
    errors: { 404: runNotFound },
    handler: ({ auth, params }) => runs.audit(auth, params.execution_id),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/runs/{execution_id}/cancel',
    operationId: 'cancelRun',
    summary: 'Cancel a run; its pending approvals are cancelled too',
    description:
      'Moves an unfinished run to CANCELLED, its pending approvals to `cancelled` and its steps not yet ' +
      'started to SKIPPED; a step already running completes (its charge joins the run’s `credits_charged` ' +
      'when it lands), and nothing after it runs. Its unfinished child runs (started by its `runs.dispatch` ' +
      'steps), and theirs, are cancelled with it. Cancelling a ' +
      'cancelled run answers it again; cancelling a run that succeeded or failed is a 409.',
    tags: ['runs'],
    scope: RUN_SCOPES.cancel,
    params: ExecutionIdParams,
    response: RunSummary,
    errors: { 404: runNotFound, 409: 'The run has already succeeded or failed' },
    handler: ({ auth, params }) => runs.cancel(auth, params.execution_id),
  }),
];
