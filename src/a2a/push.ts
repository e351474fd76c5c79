import type { Task } from '@a2a-js/sdk';
import { A2A_CONTENT_TYPE, StreamResponse, TaskState } from '@a2a-js/sdk';
import type { CallbackBodyFormat } from '../run-callbacks/formats';
import type { RunStatus } from '../runs/entities';
import { streamResponsesOf } from './events';
import { taskResponse } from './tasks';

/** Which Weft callback event a push notification says, for a receiver that follows several runs. */
const CALLBACK_EVENT_KEY = 'weft/callback_event_id';

/**
 * A push notification as `@a2a-js/sdk` 1.3's DefaultPushNotificationSender posts it (A2A 1.0): a
 * `StreamResponse` in A2A's JSON, `application/a2a+json`. A run callback event becomes the status
 * update its event says in the task's stream (input-required at an approval or event waitpoint,
 * working again after one), and the run's end becomes the task itself: its final state as GetTask
 * maps it, with the answer artifact, so the receiver needs no read to know how it ended.
 */
export function a2aPushBody(weftBody: string): string {
  const event = JSON.parse(weftBody) as {
    id: string;
    type: string;
    created_at: string;
    data: { execution_id: string } & Record<string, unknown>;
  };
  const executionId = event.data.execution_id;
  const responses = streamResponsesOf({
    id: 0,
    execution_id: executionId,
    type: event.type,
    data: event.data,
    created_at: event.created_at,
  });
  const metadata = { [CALLBACK_EVENT_KEY]: event.id };
  const statusUpdate = responses.findLast((response) => response.payload?.$case === 'statusUpdate');
  const status =
    statusUpdate?.payload?.$case === 'statusUpdate'
      ? statusUpdate.payload.value.status
      : {
          state: TaskState.TASK_STATE_WORKING,
          message: undefined,
          timestamp: new Date(event.created_at).toISOString(),
        };
  let response: StreamResponse;
  if (event.type === 'run.finished') {
    const artifacts = responses.flatMap((r) =>
      r.payload?.$case === 'artifactUpdate' && r.payload.value.artifact ? [r.payload.value.artifact] : [],
    );
    const task: Task = {
      id: executionId,
      contextId: executionId,
      status,
      artifacts,
      history: [],
      metadata: { ...metadata, 'weft/agent': event.data.agent, 'weft/status': event.data.status as RunStatus },
    };
    response = taskResponse(task);
  } else {
    response = {
      payload: {
        $case: 'statusUpdate',
        value: { taskId: executionId, contextId: executionId, status, metadata },
      },
    };
  }
  return JSON.stringify(StreamResponse.toJSON(response));
}

/** The run callbacks' `a2a` body format. */
export const a2aPushFormat: CallbackBodyFormat = { contentType: A2A_CONTENT_TYPE, render: a2aPushBody };
