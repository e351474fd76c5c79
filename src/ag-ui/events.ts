import type { Event } from '@ag-ui/core';
import { EventType, PROTOCOL_VERSION } from '@ag-ui/core';

/** A run event as the log holds it: the fields the AG-UI events are derived from. */
export interface LoggedEvent {
  id: number;
  execution_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: string;
}

/**
 * What one AG-UI stream knows of its run: the ids its run events carry, the steps it has opened
 * and not yet finished (step_id → step name), and the inputs of the steps in the page at hand.
 */
export interface RunView {
  threadId: string;
  runId: string;
  open: Map<string, string>;
  inputs: ReadonlyMap<string, unknown>;
}

/** An AG-UI step's name: the step's tool and its number (STEP_STARTED and STEP_FINISHED carry the same). */
export const stepName = (stepNo: unknown, tool: unknown) => `${String(tool)} (step ${String(stepNo)})`;

/** The CUSTOM event's name for a run event it carries as is: `approval.requested` → `weft.approval_requested`. */
export const customName = (type: string) => `weft.${type.replace(/\./g, '_')}`;

const json = (value: unknown) => JSON.stringify(value ?? null);

/** RUN_STARTED of the stream's run: before the run's first event, or first on a stream that resumes it. */
export const runStarted = (view: RunView, timestamp: number): Event => ({
  type: EventType.RUN_STARTED,
  timestamp,
  threadId: view.threadId,
  runId: view.runId,
  protocolVersion: PROTOCOL_VERSION,
});

/**
 * The AG-UI events one run event stands for, in order, as the log's row `row` says them (issue 42
 * item 3). RUN_STARTED comes before the run's first event; a step is STEP_STARTED with its tool call
 * (TOOL_CALL_START, TOOL_CALL_ARGS with its input as JSON, TOOL_CALL_END) and ends TOOL_CALL_RESULT
 * then STEP_FINISHED; `run.finished` closes the steps still open, then says the answer as a text
 * message and RUN_FINISHED (SUCCEEDED; `outcome: cancelled` for CANCELLED), or RUN_ERROR (FAILED).
 * Every other event (approvals, waitpoints, decisions, status changes, a step that failed before it
 * started) is a CUSTOM event named `weft.<type>` whose value is the run event's data. `view` is
 * updated with the steps opened and closed.
 */
export function agUiEvents(view: RunView, row: LoggedEvent): Event[] {
  const timestamp = Date.parse(row.created_at);
  const data = row.data;
  const events: Event[] = [];
  if (row.id === 1) events.push(runStarted(view, timestamp));
  const custom = (): Event => ({ type: EventType.CUSTOM, timestamp, name: customName(row.type), value: data });
  const stepId = String(data.step_id);
  switch (row.type) {
    case 'step.started': {
      const name = stepName(data.step_no, data.tool);
      view.open.set(stepId, name);
      events.push(
        { type: EventType.STEP_STARTED, timestamp, stepName: name },
        { type: EventType.TOOL_CALL_START, timestamp, toolCallId: stepId, toolCallName: String(data.tool) },
        { type: EventType.TOOL_CALL_ARGS, timestamp, toolCallId: stepId, delta: json(view.inputs.get(stepId) ?? {}) },
        { type: EventType.TOOL_CALL_END, timestamp, toolCallId: stepId },
      );
      break;
    }
    case 'step.completed':
    case 'step.failed': {
      const name = view.open.get(stepId);
      // A step that failed before it started (its approval was rejected) made no tool call to answer.
      if (name === undefined) {
        events.push(custom());
        break;
      }
      view.open.delete(stepId);
      const content = row.type === 'step.completed' ? json(data.output) : json({ error: data.error });
      events.push(
        { type: EventType.TOOL_CALL_RESULT, timestamp, messageId: `${stepId}:result`, toolCallId: stepId, content },
        { type: EventType.STEP_FINISHED, timestamp, stepName: name },
      );
      break;
    }
    case 'run.finished':
      events.push(...finished(view, row, timestamp));
      break;
    default:
      events.push(custom());
  }
  return events;
}

/** A finished run's last events: its open steps closed, its answer, then RUN_FINISHED or RUN_ERROR. */
function finished(view: RunView, row: LoggedEvent, timestamp: number): Event[] {
  const events: Event[] = [];
  // A step still running when its run was cancelled finishes after the stream has ended.
  for (const name of view.open.values()) events.push({ type: EventType.STEP_FINISHED, timestamp, stepName: name });
  view.open.clear();
  const { status, output } = row.data as { status: string; output: unknown };
  const ids = { threadId: view.threadId, runId: view.runId };
  if (status === 'FAILED') {
    const error = (row.data.error ?? {}) as { code?: string; message?: string };
    events.push({
      type: EventType.RUN_ERROR,
      timestamp,
      message: error.message ?? 'The run failed',
      ...(error.code ? { code: error.code } : {}),
    });
    return events;
  }
  if (status === 'CANCELLED') {
    events.push({ type: EventType.RUN_FINISHED, timestamp, ...ids, outcome: { type: 'cancelled' } });
    return events;
  }
  // An llm run's output is `{answer}`: the assistant's text. A playbook's (its last step's result) is only the result.
  const answer = (output as { answer?: unknown } | null)?.answer;
  if (typeof answer === 'string' && answer.length > 0) {
    const messageId = `${row.execution_id}:answer`;
    events.push(
      { type: EventType.TEXT_MESSAGE_START, timestamp, messageId, role: 'assistant' },
      { type: EventType.TEXT_MESSAGE_CONTENT, timestamp, messageId, delta: answer },
      { type: EventType.TEXT_MESSAGE_END, timestamp, messageId },
    );
  }
  events.push({
    type: EventType.RUN_FINISHED,
    timestamp,
    ...ids,
    ...(output === null || output === undefined ? {} : { result: output }),
  });
  return events;
}
