import type { CreateTaskResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { CapabilityService } from '../capabilities/service';
import type { Principal } from '../platform/auth/principal';
import { RUN_SCOPES } from '../runs/scopes';
import type { TaskDeps } from './tasks';
import { awaitedBy, protocolError, TOOL_TASK_TAG, taskOf } from './tasks';
import type { McpTool } from './tools';

/** The registry's tools whose work outlives a request; a workspace's own (connector) tools are too. */
const TASK_TOOLS: ReadonlySet<string> = new Set(['runs.dispatch', 'ontology.remember']);

/**
 * `execution.taskSupport` of a tool for this credential: `optional` for `runs.dispatch`,
 * `ontology.remember` and the workspace's connector tools when the credential may dispatch and
 * read runs (their task is a run), else absent (a plain call).
 */
export function withTaskSupport(tool: McpTool, own: boolean, principal: Principal): Tool {
  const eligible = own || TASK_TOOLS.has(tool.capability);
  const mayRun = principal.scopes.has(RUN_SCOPES.dispatch) && principal.scopes.has(RUN_SCOPES.read);
  return eligible && mayRun ? { ...tool.definition, execution: { taskSupport: 'optional' } } : tool.definition;
}

export interface TaskCall {
  principal: Principal;
  tool: McpTool;
  own: boolean;
  input: Record<string, unknown>;
  idempotencyKey?: string;
  correlationId?: string;
}

/**
 * A `tools/call` with `task`: answers at once with the task of a durable run. `runs.dispatch`
 * dispatches its run; another tool is dispatched as a one-step playbook calling it (tagged
 * TOOL_TASK_TAG, so its task's result is the tool's own answer). Through the `runs.dispatch`
 * capability, with its scopes, checks, credits and Idempotency-Key replay.
 */
export async function startTask(
  deps: TaskDeps & { capabilities: Pick<CapabilityService, 'invoke'> },
  call: TaskCall,
): Promise<CreateTaskResult> {
  const { principal, tool } = call;
  if (!withTaskSupport(tool, call.own, principal).execution) {
    throw new McpError(ErrorCode.MethodNotFound, `Tool ${tool.definition.name} does not support tasks`);
  }
  const body =
    tool.capability === 'runs.dispatch'
      ? call.input
      : { agent: 'playbook', input: { steps: [{ tool: tool.capability, input: call.input }] }, tags: [TOOL_TASK_TAG] };
  const outcome = await deps.capabilities.invoke(principal, 'runs.dispatch', body, {
    idempotencyKey: call.idempotencyKey,
    correlationId: call.correlationId,
  });
  const executionId = (outcome.envelope.result as { execution_id: string }).execution_id;
  try {
    const run = await deps.runs.summary(principal, executionId);
    return { task: await taskOf(run, () => awaitedBy(run, principal, deps)) };
  } catch (error) {
    throw protocolError(error, deps.logger, 'task start');
  }
}
