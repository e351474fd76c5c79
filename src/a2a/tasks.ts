import type { Artifact, Message, Part, StreamResponse, Task, TaskStatus } from '@a2a-js/sdk';
import { Role, TaskState } from '@a2a-js/sdk';
import type { RunStatus } from '../runs/entities';
import type { RunDetail } from '../runs/schemas';

// A Weft run seen as an A2A task (issue 42 item 2): the task id is the run's execution_id, its
// steps' outputs and its final answer are artifacts, its goal is the history's user message.

/** queued/running → working; awaiting a person or an event → input-required; finished → its end. */
export const TASK_STATE_OF: Record<RunStatus, TaskState> = {
  QUEUED: TaskState.TASK_STATE_WORKING,
  RUNNING: TaskState.TASK_STATE_WORKING,
  AWAITING_APPROVAL: TaskState.TASK_STATE_INPUT_REQUIRED,
  WAITING: TaskState.TASK_STATE_WORKING,
  SUCCEEDED: TaskState.TASK_STATE_COMPLETED,
  FAILED: TaskState.TASK_STATE_FAILED,
  CANCELLED: TaskState.TASK_STATE_CANCELED,
};

/** A task state a run status alone stands for, for `ListTasks`' filter (the others are filtered after). */
export const RUN_STATUS_OF: Partial<Record<TaskState, RunStatus>> = {
  [TaskState.TASK_STATE_COMPLETED]: 'SUCCEEDED',
  [TaskState.TASK_STATE_FAILED]: 'FAILED',
  [TaskState.TASK_STATE_CANCELED]: 'CANCELLED',
};

/** The states after which a task changes no more. */
export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
]);

/** Where the event a stream item came from sits in the run's log (`GET /v1/runs/{id}/events` ids). */
export const EVENT_ID_KEY = 'weft/event_id';

export const textPart = (text: string): Part => ({
  content: { $case: 'text', value: text },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});

export const dataPart = (value: unknown): Part => ({
  content: { $case: 'data', value },
  metadata: undefined,
  filename: '',
  mediaType: 'application/json',
});

export const agentMessage = (executionId: string, messageId: string, parts: Part[]): Message => ({
  messageId,
  contextId: executionId,
  taskId: executionId,
  role: Role.ROLE_AGENT,
  parts,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

/** What the run waits for, as the agent's message of an input-required status: the approval and its step. */
export function approvalMessage(
  executionId: string,
  approval: { approval_id: string; step_no: number; tool: string; input: unknown },
): Message {
  const text =
    `Step ${approval.step_no} (${approval.tool}) waits for approval ${approval.approval_id}: ` +
    'reply "approve" or "reject" (or a data part {decision, notes, input, message}).';
  return agentMessage(executionId, `approval-${approval.approval_id}`, [
    textPart(text),
    dataPart({ kind: 'approval', ...approval }),
  ]);
}

/** An `event` waitpoint's message: the run goes on once it is completed with an output. */
export function waitpointMessage(
  executionId: string,
  waitpoint: { waitpoint_id: string; step_no: number; name: string | null },
): Message {
  const text =
    `Step ${waitpoint.step_no} waits for event${waitpoint.name ? ` "${waitpoint.name}"` : ''} ` +
    `(waitpoint ${waitpoint.waitpoint_id}): reply with its output (a data part, or text).`;
  return agentMessage(executionId, `waitpoint-${waitpoint.waitpoint_id}`, [
    textPart(text),
    dataPart({ kind: 'waitpoint', ...waitpoint }),
  ]);
}

export const stepArtifact = (step: { step_no: number; tool: string; output: unknown }): Artifact => ({
  artifactId: `step-${step.step_no}`,
  name: step.tool,
  description: `The output of step ${step.step_no} (${step.tool}).`,
  parts: [dataPart(step.output ?? null)],
  metadata: undefined,
  extensions: [],
});

/** The run's output: an llm run's `{answer}` as text, a playbook's last result as data. */
export function answerArtifact(output: unknown): Artifact | null {
  if (output === null || output === undefined) return null;
  const answer = (output as { answer?: unknown }).answer;
  return {
    artifactId: 'answer',
    name: 'answer',
    description: 'The run’s final answer (an llm run’s) or output (a playbook’s last result).',
    parts: typeof answer === 'string' ? [textPart(answer)] : [dataPart(output)],
    metadata: undefined,
    extensions: [],
  };
}

/** The message that asked for the run: its goal (llm) or its steps (playbook). */
function userMessage(run: Pick<RunDetail, 'execution_id' | 'input'>): Message {
  const goal = typeof run.input.goal === 'string' ? run.input.goal : null;
  return {
    messageId: `goal-${run.execution_id}`,
    contextId: run.execution_id,
    taskId: run.execution_id,
    role: Role.ROLE_USER,
    parts: [goal === null ? dataPart(run.input) : textPart(goal)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** A run just dispatched (QUEUED), as its dispatch answered it: no read needed to say it is working. */
export function dispatchedTask(
  dispatched: { execution_id: string; status: RunStatus },
  run: { agent: RunDetail['agent']; input: Record<string, unknown> },
): Task {
  return {
    id: dispatched.execution_id,
    contextId: dispatched.execution_id,
    status: { state: TASK_STATE_OF[dispatched.status], message: undefined, timestamp: new Date().toISOString() },
    artifacts: [],
    history: [userMessage({ execution_id: dispatched.execution_id, input: run.input })],
    metadata: { 'weft/agent': run.agent, 'weft/status': dispatched.status },
  };
}

/** The status a run shows: what it waits for when it waits on a person or an event, why it failed. */
function statusOf(run: RunDetail, waitpoint: WaitingPoint | null): TaskStatus {
  const pending = run.approvals.find((approval) => approval.status === 'pending' && approval.step);
  let message: Message | undefined;
  let state = TASK_STATE_OF[run.status];
  if (run.status === 'AWAITING_APPROVAL' && pending?.step) {
    message = approvalMessage(run.execution_id, { approval_id: pending.approval_id, ...pending.step });
  } else if (run.status === 'WAITING' && waitpoint) {
    state = TaskState.TASK_STATE_INPUT_REQUIRED;
    message = waitpointMessage(run.execution_id, waitpoint);
  } else if (run.status === 'FAILED' && run.error) {
    message = agentMessage(run.execution_id, `error-${run.execution_id}`, [
      textPart(`${run.error.code}: ${run.error.message}`),
    ]);
  }
  return { state, message, timestamp: run.updated_at };
}

/** An `event` waitpoint a run waits on (a person or a system completes it with an output). */
export interface WaitingPoint {
  waitpoint_id: string;
  step_no: number;
  name: string | null;
}

/** The task of a run, as `GetTask` answers it: history (the goal, then what the run asks), artifacts. */
export function taskOf(run: RunDetail, waitpoint: WaitingPoint | null, historyLength?: number): Task {
  const status = statusOf(run, waitpoint);
  const artifacts = run.steps
    .filter((step) => step.kind === 'TOOL' && step.status === 'SUCCEEDED')
    .map((step) => stepArtifact(step));
  const answer = run.status === 'SUCCEEDED' ? answerArtifact(run.output) : null;
  const history = [userMessage(run), ...(status.message ? [status.message] : [])];
  return {
    id: run.execution_id,
    contextId: run.execution_id,
    status,
    artifacts: answer ? [...artifacts, answer] : artifacts,
    // historyLength: absent, all of it; 0, none; n, the last n.
    history: historyLength === undefined ? history : historyLength === 0 ? [] : history.slice(-historyLength),
    metadata: { 'weft/agent': run.agent, 'weft/status': run.status },
  };
}

/** A listed run as a task, from its summary: `GetTask`'s state, without history or artifacts. */
export function summaryTask(
  run: Pick<RunDetail, 'execution_id' | 'agent' | 'status' | 'updated_at'>,
  waitpoint: WaitingPoint | null,
): Task {
  const state = run.status === 'WAITING' && waitpoint ? TaskState.TASK_STATE_INPUT_REQUIRED : TASK_STATE_OF[run.status];
  return {
    id: run.execution_id,
    contextId: run.execution_id,
    status: { state, message: undefined, timestamp: run.updated_at },
    artifacts: [],
    history: [],
    metadata: { 'weft/agent': run.agent, 'weft/status': run.status },
  };
}

export const taskResponse = (task: Task): StreamResponse => ({ payload: { $case: 'task', value: task } });
