import type { Message, StreamResponse } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import type { RunStatus } from '../runs/entities';
import {
  agentMessage,
  answerArtifact,
  approvalMessage,
  EVENT_ID_KEY,
  stepArtifact,
  TASK_STATE_OF,
  textPart,
  waitpointMessage,
} from './tasks';

/** A `run_events` row, as the A2A streams read it. */
export interface RunEventRow {
  id: number;
  execution_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: string;
}

const status = (row: RunEventRow, state: TaskState, message?: Message): StreamResponse => ({
  payload: {
    $case: 'statusUpdate',
    value: {
      taskId: row.execution_id,
      contextId: row.execution_id,
      status: { state, message, timestamp: new Date(row.created_at).toISOString() },
      metadata: { [EVENT_ID_KEY]: row.id },
    },
  },
});

const artifact = (row: RunEventRow, value: NonNullable<ReturnType<typeof answerArtifact>>): StreamResponse => ({
  payload: {
    $case: 'artifactUpdate',
    value: {
      taskId: row.execution_id,
      contextId: row.execution_id,
      artifact: value,
      append: false,
      lastChunk: true,
      metadata: { [EVENT_ID_KEY]: row.id },
    },
  },
});

/**
 * What one event of the run's log says in A2A: a status update (the run moved, waits for a person or
 * an event, ended) or an artifact update (a step's output, the final answer). Events that change
 * neither (a step started, a vote, a decision) say nothing.
 */
export function streamResponsesOf(row: RunEventRow): StreamResponse[] {
  const data = row.data;
  switch (row.type) {
    case 'run.status': {
      const runStatus = data.status as RunStatus;
      // The approval's own event says what it waits for, a waitpoint's too; run.finished says how it ended.
      if (['AWAITING_APPROVAL', 'WAITING', 'SUCCEEDED', 'FAILED', 'CANCELLED'].includes(runStatus)) return [];
      return [status(row, TASK_STATE_OF[runStatus])];
    }
    case 'approval.requested':
      return [
        status(
          row,
          TaskState.TASK_STATE_INPUT_REQUIRED,
          approvalMessage(row.execution_id, {
            approval_id: String(data.approval_id),
            step_no: Number(data.step_no),
            tool: String(data.tool),
            input: data.input,
          }),
        ),
      ];
    case 'approval.resolved':
      return data.status === 'approved' ? [status(row, TaskState.TASK_STATE_WORKING)] : [];
    case 'waitpoint.created':
      return [
        data.kind === 'event'
          ? status(
              row,
              TaskState.TASK_STATE_INPUT_REQUIRED,
              waitpointMessage(row.execution_id, {
                waitpoint_id: String(data.waitpoint_id),
                step_no: Number(data.step_no),
                name: (data.name as string | null) ?? null,
              }),
            )
          : status(row, TaskState.TASK_STATE_WORKING),
      ];
    case 'waitpoint.completed':
      return [status(row, TaskState.TASK_STATE_WORKING)];
    case 'step.completed':
      return [
        artifact(row, stepArtifact({ step_no: Number(data.step_no), tool: String(data.tool), output: data.output })),
      ];
    case 'run.finished': {
      const runStatus = data.status as RunStatus;
      const answer = runStatus === 'SUCCEEDED' ? answerArtifact(data.output) : null;
      const error = data.error as { code: string; message: string } | null;
      const message = error
        ? agentMessage(row.execution_id, `error-${row.execution_id}`, [textPart(`${error.code}: ${error.message}`)])
        : undefined;
      return [...(answer ? [artifact(row, answer)] : []), status(row, TASK_STATE_OF[runStatus], message)];
    }
    default:
      return [];
  }
}

/** The state a stream item reports, if it is a status update. */
export const stateOf = (response: StreamResponse): TaskState | undefined =>
  response.payload?.$case === 'statusUpdate' ? response.payload.value.status?.state : undefined;
