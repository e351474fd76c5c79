import type { TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { CallToolResult, Task } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { toWireName } from '../capabilities/wire-names';
import { describeError } from '../platform/api/errors';
import type { Principal } from '../platform/auth/principal';
import type { ScopeName } from '../platform/auth/scopes';
import { isUuid } from '../platform/auth/tokens';
import type { Logger } from '../platform/logger';
import { LIMITS } from '../rules/limits';
import type { RunDetail, RunSummary } from '../runs/schemas';
import { RUN_SCOPES } from '../runs/scopes';
import type { RunService } from '../runs/service';
import type { WaitpointService } from '../runs/waitpoints';

/**
 * The tag of a run started for a task-augmented call of a tool other than `runs.dispatch` (a one-step
 * playbook calling that tool): its task's result is the step's output, as the tool would have answered.
 */
export const TOOL_TASK_TAG = 'mcp-task';

export interface TaskDeps {
  runs: Pick<RunService, 'get' | 'summary' | 'list' | 'cancel'>;
  waitpoints: Pick<WaitpointService, 'list'>;
  logger: Logger;
}

type RunView = Pick<RunDetail, 'execution_id' | 'status' | 'error' | 'created_at' | 'updated_at'>;

/** A refusal of the runs service as a JSON-RPC error, with the status and detail REST would answer. */
export function protocolError(error: unknown, logger: Logger, what: string): McpError {
  if (error instanceof McpError) return error;
  const described = describeError(error);
  if (!described || described.status >= 500) {
    logger.error({ err: error }, `mcp ${what} failed`);
    return new McpError(ErrorCode.InternalError, 'Internal server error');
  }
  const { status, detail } = described;
  const message = typeof detail === 'string' ? detail : `Refused (${status})`;
  return new McpError(ErrorCode.InvalidParams, message, { status, detail });
}

function requireScope(principal: Principal, scope: ScopeName): void {
  if (!principal.scopes.has(scope)) throw new McpError(ErrorCode.InvalidRequest, `Missing scope ${scope}`);
}

/** What a run awaits, for `input_required`'s status message: its pending approval, or its waitpoint. */
export async function awaitedBy(run: RunSummary, principal: Principal, deps: TaskDeps): Promise<string> {
  if (run.status === 'AWAITING_APPROVAL') {
    const { approvals } = await deps.runs.get(principal, run.execution_id);
    const approval = approvals.find((row) => row.status === 'pending');
    if (!approval) return 'Awaiting an approval';
    const step = approval.step ? ` of step ${approval.step.step_no} (${approval.step.tool})` : '';
    // The tool to call names the door the client is at (issue 42); the REST route stays for people.
    return (
      `Awaiting approval ${approval.approval_id}${step}: call ${toWireName('approvals.resolve')} ` +
      `{approval_id, decision} with a person's credential (approvals:write), or ` +
      `POST /v1/approvals/${approval.approval_id}/resolve`
    );
  }
  const [waitpoint] = (
    await deps.waitpoints.list(principal, { status: 'waiting', execution_id: run.execution_id, limit: 1 })
  ).waitpoints;
  if (!waitpoint) return 'Waiting at a waitpoint';
  const named = waitpoint.name ? ` "${waitpoint.name}"` : '';
  const how =
    waitpoint.kind === 'event'
      ? `: call ${toWireName('waitpoints.complete')} {waitpoint_id, output}, or ` +
        `POST /v1/waitpoints/${waitpoint.waitpoint_id}/complete`
      : '';
  return `Waiting at ${waitpoint.kind} waitpoint ${waitpoint.waitpoint_id}${named} of step ${waitpoint.step_no}${how}`;
}

/**
 * A run as an MCP task (protocol 2025-11-25): queued or running is `working`, awaiting an approval
 * or a waitpoint is `input_required` (the message names it), then `completed`, `failed` or
 * `cancelled`. Runs are kept, so the task has no TTL (`null`). `awaited` says what an
 * `input_required` run waits for (a list says only "Awaiting input").
 */
export async function taskOf(run: RunView, awaited?: () => Promise<string>): Promise<Task> {
  const base = {
    taskId: run.execution_id,
    ttl: null,
    createdAt: run.created_at,
    lastUpdatedAt: run.updated_at,
    pollInterval: LIMITS.mcpTasks.pollIntervalMs,
  };
  switch (run.status) {
    case 'QUEUED':
    case 'RUNNING':
      return { ...base, status: 'working', statusMessage: run.status === 'QUEUED' ? 'Queued' : 'Running' };
    case 'AWAITING_APPROVAL':
    case 'WAITING':
      return { ...base, status: 'input_required', statusMessage: awaited ? await awaited() : 'Awaiting input' };
    case 'SUCCEEDED':
      return { ...base, status: 'completed' };
    case 'FAILED':
      return {
        ...base,
        status: 'failed',
        statusMessage: run.error ? `${run.error.code}: ${run.error.message}` : 'Failed',
      };
    case 'CANCELLED':
      return { ...base, status: 'cancelled', statusMessage: 'Cancelled' };
  }
}

/**
 * A finished run as the answer of the call that created its task. A run started for another tool
 * (tagged TOOL_TASK_TAG) answers with its step's output, as the tool would have; a `runs.dispatch`
 * answers with the dispatch's shape (now with the final status) and the run's output as text.
 */
export function resultOf(run: RunDetail): CallToolResult {
  const outcome = { execution_id: run.execution_id, status: run.status, output: run.output, error: run.error };
  if (run.status !== 'SUCCEEDED') {
    return { isError: true, content: [{ type: 'text', text: JSON.stringify(outcome) }] };
  }
  if (run.tags.includes(TOOL_TASK_TAG)) {
    const output = (run.output ?? {}) as Record<string, unknown>;
    return { content: [{ type: 'text', text: JSON.stringify(output) }], structuredContent: output };
  }
  return {
    content: [{ type: 'text', text: JSON.stringify(outcome) }],
    structuredContent: {
      execution_id: run.execution_id,
      run_id: run.run_id,
      status: run.status,
      was_duplicate: false,
      queued_reason: run.queued_reason,
    },
  };
}

/**
 * The SDK's TaskStore over Weft's runs, bound to one request's credential: nothing is kept in the
 * process, so any API process answers for any task, before and after a restart. Reads go through the
 * runs service under the credential's workspace (RLS), so another workspace's task id is "not found".
 * Tasks are created by `tools/call` (service.ts), never by the SDK, and only a cancel changes one.
 */
export function runTaskStore(principal: Principal, deps: TaskDeps): TaskStore {
  const { runs, logger } = deps;

  /** The run behind `taskId` (its summary, or with `detail` its steps and output too), or null. */
  async function find(taskId: string): Promise<RunSummary | null>;
  async function find(taskId: string, detail: true): Promise<RunDetail | null>;
  async function find(taskId: string, detail = false): Promise<RunSummary | RunDetail | null> {
    requireScope(principal, RUN_SCOPES.read);
    if (!isUuid(taskId)) return null;
    try {
      const id = taskId.toLowerCase();
      return await (detail ? runs.get(principal, id) : runs.summary(principal, id));
    } catch (error) {
      if (describeError(error)?.status === 404) return null;
      throw protocolError(error, logger, 'task read');
    }
  }

  const notCreatedHere = async (): Promise<never> => {
    throw new McpError(ErrorCode.InvalidRequest, 'Tasks are created by tools/call of a tool with taskSupport');
  };

  return {
    createTask: notCreatedHere,
    storeTaskResult: notCreatedHere,

    async getTask(taskId) {
      const run = await find(taskId);
      return run && taskOf(run, () => awaitedBy(run, principal, deps));
    },

    async getTaskResult(taskId) {
      const run = await find(taskId, true);
      if (!run) throw new McpError(ErrorCode.InvalidParams, `Task not found: ${taskId}`);
      return resultOf(run);
    },

    async updateTaskStatus(taskId, status) {
      if (status !== 'cancelled') throw new McpError(ErrorCode.InvalidRequest, `A task cannot be set ${status}`);
      requireScope(principal, RUN_SCOPES.cancel);
      try {
        await runs.cancel(principal, taskId.toLowerCase());
      } catch (error) {
        throw protocolError(error, logger, 'task cancel');
      }
    },

    // Every run of the workspace is a task, newest first, as GET /v1/runs pages them.
    async listTasks(cursor) {
      requireScope(principal, RUN_SCOPES.read);
      try {
        const page = await runs.list(principal, { limit: LIMITS.mcpTasks.list, cursor });
        const tasks = await Promise.all(page.runs.map((run) => taskOf(run)));
        return { tasks, ...(page.next_cursor ? { nextCursor: page.next_cursor } : {}) };
      } catch (error) {
        throw protocolError(error, logger, 'task list');
      }
    },
  };
}
