import { z } from 'zod';
import { defineCapability } from '../capabilities/define';
import { LIMITS } from '../rules/limits';
import { childLineage } from './children';
import { DispatchRunResponse, DispatchRunToolInput, RunDetail, RunSummary } from './schemas';
import { RUN_SCOPES } from './scopes';
import type { RunService } from './service';

const ExecutionRef = z.strictObject({ execution_id: z.uuid().describe('The run (`POST /v1/runs`’s `execution_id`).') });
const runNotFound = 'run_not_found: no such run in the workspace';

// The routes' response components, unnamed: a named one is a `$ref` at the top of the tool's output
// schema, where MCP needs `type: "object"` (a copy has no id; the components inside keep theirs).
const DispatchOutput = DispatchRunResponse.extend({});
const RunOutput = RunDetail.extend({});
const SummaryOutput = RunSummary.extend({});
const example = { execution_id: '7a1c2b9e-4d3f-4b8a-9c6e-2f1d0e9b8a7c' };

/**
 * Runs as tools (issue 40 item 2): `runs.dispatch`, `runs.get` and `runs.cancel` do what
 * `POST /v1/runs`, `GET /v1/runs/{id}` and its cancel do, with their scopes (`scopes.ts`), free like
 * them. A dispatch made by a run's step (`call.runId`) is that run's child (`children.ts`); the step
 * key is its idempotency key, so a retried step replays the child it started instead of starting
 * another. Writes dispatch and cancel inside the capability layer's transaction, so the run and the
 * stored answer commit together; the workflow starts (or is woken) once they have.
 */
export const runTools = (deps: { runs: () => Pick<RunService, 'dispatchIn' | 'get' | 'cancelIn'> }) => [
  defineCapability({
    name: 'runs.dispatch',
    access: 'write',
    scopes: [RUN_SCOPES.dispatch],
    description:
      'Dispatches a run: the body of POST /v1/runs without `callback`. Called by a run’s step, the new run is ' +
      `that run’s child (parent_execution_id, root_execution_id), at most ${LIMITS.runs.maxDepth} levels deep`,
    input: DispatchRunToolInput,
    output: DispatchOutput,
    example: { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance', input: {} }] } },
    errors: {
      400: "The credential lacks a scope one of the steps' tools needs",
      403: `Missing scope ${RUN_SCOPES.dispatch}`,
      409:
        'idempotency_key_reused (the body’s idempotency_key) or concurrency_limit, as POST /v1/runs; or ' +
        'run_finished: the run whose step called it has ended (a cancel came first)',
      422: `run_depth_exceeded: a step of a run ${LIMITS.runs.maxDepth} levels deep may not start another run`,
    },
    handler: async (call, input) => {
      const lineage = call.runId ? await childLineage(call.m, call.runId) : undefined;
      const { response, after } = await deps.runs().dispatchIn(call.m, call.principal, input, { lineage });
      // The start waits for the commit; it logs its own failures and the outbox starts the run anyway.
      call.afterCommit(() => void after());
      return response;
    },
  }),
  defineCapability({
    name: 'runs.get',
    access: 'read',
    scopes: [RUN_SCOPES.read],
    description: 'One run with its steps and approvals, as GET /v1/runs/{execution_id} answers it',
    input: ExecutionRef,
    output: RunOutput,
    example,
    errors: { 403: `Missing scope ${RUN_SCOPES.read}`, 404: runNotFound },
    handler: ({ principal }, input) => deps.runs().get(principal, input.execution_id),
  }),
  defineCapability({
    name: 'runs.cancel',
    access: 'write',
    scopes: [RUN_SCOPES.cancel],
    description:
      'Cancels a run that has not finished, and its unfinished child runs, as POST /v1/runs/{execution_id}/cancel',
    input: ExecutionRef,
    output: SummaryOutput,
    example,
    repeatSafe: true,
    destructive: true,
    errors: {
      403: `Missing scope ${RUN_SCOPES.cancel}`,
      404: runNotFound,
      409: 'run_finished: the run has already succeeded or failed',
    },
    handler: async (call, input) => {
      const { summary, after } = await deps.runs().cancelIn(call.m, call.principal.workspaceId, input.execution_id);
      call.afterCommit(() => void after());
      return summary;
    },
  }),
];
