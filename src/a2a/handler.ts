import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import { ExtendedAgentCardNotConfiguredError, RequestMalformedError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import type { ApprovalService } from '../approvals/service';
import type { Principal } from '../platform/auth/principal';
import type { NotifyListener } from '../platform/db/notify-listener';
import type { Logger } from '../platform/logger';
import { LIMITS } from '../rules/limits';
import { CALLBACK_EVENT_TYPES } from '../run-callbacks/events';
import type { RunCallbackService } from '../run-callbacks/service';
import { RUN_SCOPES } from '../runs/scopes';
import type { RunService } from '../runs/service';
import type { WaitpointService } from '../runs/waitpoints';
import { answerRun, need } from './answers';
import { asA2A as mapped } from './errors';
import { stateOf, streamResponsesOf } from './events';
import type { RunEventReader } from './follow';
import { followRunEvents } from './follow';
import { dispatchOf } from './skills';
import type { WaitingPoint } from './tasks';
import { dispatchedTask, RUN_STATUS_OF, summaryTask, TERMINAL_STATES, taskOf, taskResponse } from './tasks';

export interface A2ADeps {
  runs: RunService;
  approvals: ApprovalService;
  waitpoints: WaitpointService;
  runCallbacks: RunCallbackService;
  readEvents: RunEventReader;
  listener: NotifyListener;
  logger: Logger;
}

/** What one request brings: its caller, its card, where a resumed stream starts, when its client left. */
export interface A2ARequest {
  principal: Principal;
  card: AgentCard;
  /** `Last-Event-ID` of a resumed `SubscribeToTask`: the run event it saw last. */
  lastEventId?: number;
  signal: AbortSignal;
}

/** An A2A push config's token or credentials, at most this long. */
const MAX_SECRET_CHARS = 1000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A task id is an execution id: anything else names no task (never a 500 from a malformed uuid). */
function taskIdOf(id: string | undefined): string {
  if (!id?.trim()) throw new RequestMalformedError('A task id is required');
  if (!UUID.test(id)) throw new TaskNotFoundError(`No task ${id.slice(0, 100)}`);
  return id.toLowerCase();
}

const interrupted = (state: TaskState | undefined) =>
  state !== undefined && (TERMINAL_STATES.has(state) || state === TaskState.TASK_STATE_INPUT_REQUIRED);

/**
 * Weft's A2A request handler (`@a2a-js/sdk`'s `A2ARequestHandler`), built per request: the SDK's
 * JSON-RPC transports (1.0 and the 0.3 compatibility one) parse the call and shape the answer; every
 * method here is one or two calls of the run, approval, waitpoint and callback services, as the
 * caller, with the scopes of the equivalent REST route. Stateless: tasks are runs, streams are the
 * run's event log, push configs are run callbacks.
 */
export function createA2AHandler(deps: A2ADeps, request: A2ARequest): A2ARequestHandler {
  const { principal } = request;
  const internal = (error: unknown) => deps.logger.error({ err: error }, 'A2A call failed');
  const asA2A = <T>(work: () => Promise<T>, operation: 'cancel' | 'other' = 'other') =>
    mapped(work, operation, internal);

  async function waitingPointOf(executionId: string, status: string): Promise<WaitingPoint | null> {
    if (status !== 'WAITING') return null;
    const { waitpoints } = await deps.waitpoints.list(principal, {
      execution_id: executionId,
      status: 'waiting',
      limit: 1,
    });
    const event = waitpoints.find((wp) => wp.kind === 'event');
    return event ? { waitpoint_id: event.waitpoint_id, step_no: event.step_no, name: event.name } : null;
  }

  async function snapshot(executionId: string, historyLength?: number): Promise<Task> {
    const run = await deps.runs.get(principal, executionId);
    return taskOf(run, await waitingPointOf(executionId, run.status), historyLength);
  }

  /** The run's latest event id: a stream that starts with a snapshot follows what comes after it. */
  async function headOf(executionId: string): Promise<number> {
    let head = 0;
    for (;;) {
      const rows = await deps.readEvents(principal, executionId, head);
      if (rows.length === 0) return head;
      head = rows.at(-1)!.id;
    }
  }

  /** The run's stream items after `after`, until `stop` says so or the run finished. */
  async function* follow(executionId: string, after: number, stop: (state: TaskState | undefined) => boolean) {
    for await (const row of followRunEvents(deps, principal, executionId, after, request.signal)) {
      for (const response of streamResponsesOf(row)) {
        yield response;
        if (stop(stateOf(response))) return;
      }
    }
  }

  /**
   * A new message starts a run; one naming a task answers what that run waits for. Answers the run's
   * id, the event its updates follow, and a new run's task as its dispatch answered it.
   */
  async function start(params: SendMessageRequest): Promise<{ executionId: string; after: number; task?: Task }> {
    const message: Message | undefined = params.message;
    if (!message) throw new RequestMalformedError('params.message is required');
    if (message.taskId) {
      const executionId = taskIdOf(message.taskId);
      const run = await deps.runs.get(principal, executionId);
      const after = await headOf(executionId);
      await answerRun(deps, principal, run, await waitingPointOf(executionId, run.status), message);
      return { executionId, after };
    }
    need(principal, RUN_SCOPES.dispatch);
    const body = dispatchOf(message, params.metadata);
    const dispatched = await deps.runs.dispatch(principal, body);
    const push = params.configuration?.taskPushNotificationConfig;
    if (push?.url && !dispatched.was_duplicate) await attachPush(dispatched.execution_id, push);
    const task = dispatched.was_duplicate ? undefined : dispatchedTask(dispatched, body);
    return { executionId: dispatched.execution_id, after: 0, task };
  }

  /**
   * A push config is a run callback in the `a2a` format: its receiver gets A2A push notifications with
   * the client's own `token` (or `authentication`), kept sealed and never answered back.
   */
  async function attachPush(
    executionId: string,
    config: Pick<TaskPushNotificationConfig, 'url' | 'token' | 'authentication'>,
  ): Promise<TaskPushNotificationConfig> {
    need(principal, 'runs:write');
    const token = config.token ?? '';
    const scheme = config.authentication?.scheme ?? '';
    const credentials = config.authentication?.credentials ?? '';
    if (token.length > MAX_SECRET_CHARS || scheme.length > 100 || credentials.length > MAX_SECRET_CHARS) {
      throw new RequestMalformedError(`token and credentials are at most ${MAX_SECRET_CHARS} characters`);
    }
    const created = await deps.runCallbacks.attachToRun(
      principal,
      executionId,
      { url: config.url, events: [...CALLBACK_EVENT_TYPES] },
      { token, authentication: scheme ? { scheme, credentials } : null },
    );
    return pushConfigOf(executionId, created, scheme);
  }

  /**
   * A2A 1.0 `ListTasks`: the workspace's runs as tasks, newest first, paged as `GET /v1/runs` pages them
   * (`pageToken` is its cursor). Each task's state is `GetTask`'s; history and artifacts only when asked
   * for (`historyLength`, `includeArtifacts`), since they cost a read of the run. A state, context or
   * time filter keeps a page's matching tasks, so a page may hold fewer than `pageSize`.
   */
  async function listTasks(params: ListTasksRequest): Promise<ListTasksResponse> {
    need(principal, RUN_SCOPES.read);
    const pageSize = params.pageSize ?? LIMITS.a2a.listTasks.default;
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > LIMITS.a2a.listTasks.max) {
      throw new RequestMalformedError(`pageSize must be between 1 and ${LIMITS.a2a.listTasks.max}`);
    }
    const after = params.statusTimestampAfter ? Date.parse(params.statusTimestampAfter) : undefined;
    if (Number.isNaN(after)) throw new RequestMalformedError('statusTimestampAfter must be an ISO 8601 date');
    const wanted = params.status ? params.status : undefined;
    const page = await deps.runs.list(principal, {
      limit: pageSize,
      ...(params.pageToken ? { cursor: params.pageToken } : {}),
      ...(wanted !== undefined && RUN_STATUS_OF[wanted] ? { status: RUN_STATUS_OF[wanted] } : {}),
    });
    const full = params.includeArtifacts === true || (params.historyLength ?? 0) > 0;
    const tasks: Task[] = [];
    for (const run of page.runs) {
      if (params.contextId && params.contextId !== run.execution_id) continue;
      if (after !== undefined && Date.parse(run.updated_at) < after) continue;
      const waiting = await waitingPointOf(run.execution_id, run.status);
      const task = full ? await snapshot(run.execution_id, params.historyLength ?? 0) : summaryTask(run, waiting);
      if (wanted !== undefined && task.status?.state !== wanted) continue;
      tasks.push(params.includeArtifacts ? task : { ...task, artifacts: [] });
    }
    // Weft does not count the workspace's runs: `totalSize` is what this page holds.
    return { tasks, nextPageToken: page.next_cursor ?? '', pageSize, totalSize: tasks.length };
  }

  // The token and credentials are the client's own: never answered back (the scheme alone says one is set).
  const pushConfigOf = (executionId: string, sub: { id: string; url: string }, scheme = '') => ({
    tenant: '',
    id: sub.id,
    taskId: executionId,
    url: sub.url,
    token: '',
    authentication: scheme ? { scheme, credentials: '' } : undefined,
  });

  return {
    getAgentCard: async () => request.card,

    getAuthenticatedExtendedAgentCard: async () => {
      throw new ExtendedAgentCardNotConfiguredError('Weft has no extended agent card');
    },

    sendMessage: (params) =>
      asA2A(async () => {
        const { executionId, after, task } = await start(params);
        if (params.configuration?.returnImmediately) return task ?? snapshot(executionId);
        // Blocking (A2A's default): until the run finishes or asks for input, at most blockingWaitSeconds.
        // From `after`: an answered run's earlier input-required is behind it, a new run's whole log ahead.
        const waited = AbortSignal.any([request.signal, AbortSignal.timeout(LIMITS.a2a.blockingWaitSeconds * 1000)]);
        for await (const row of followRunEvents(deps, principal, executionId, after, waited)) {
          if (streamResponsesOf(row).some((response) => interrupted(stateOf(response)))) break;
        }
        return snapshot(executionId, params.configuration?.historyLength);
      }),

    async *sendMessageStream(params): AsyncGenerator<StreamResponse, void, undefined> {
      const { executionId, after, task } = await asA2A(() => start(params));
      yield taskResponse(task ?? (await asA2A(() => snapshot(executionId))));
      // As the SDK's own server: the stream ends when the task ends or asks for input.
      yield* follow(executionId, after, interrupted);
    },

    getTask: (params: GetTaskRequest) =>
      asA2A(async () => {
        need(principal, RUN_SCOPES.read);
        return snapshot(taskIdOf(params.id), params.historyLength);
      }),

    cancelTask: (params: CancelTaskRequest) =>
      asA2A(async () => {
        need(principal, RUN_SCOPES.cancel);
        const executionId = taskIdOf(params.id);
        await deps.runs.cancel(principal, executionId);
        return snapshot(executionId);
      }, 'cancel'),

    async *resubscribe(params: SubscribeToTaskRequest): AsyncGenerator<StreamResponse, void, undefined> {
      const { executionId, after, task } = await asA2A(async () => {
        need(principal, RUN_SCOPES.read);
        const id = taskIdOf(params.id);
        const head = request.lastEventId ?? (await headOf(id));
        return { executionId: id, after: head, task: await snapshot(id) };
      });
      yield taskResponse(task);
      if (TERMINAL_STATES.has(task.status!.state)) {
        // A finished run's log is complete: what came after the client's event, then the end.
        for (let cursor = after; ; ) {
          const rows = await asA2A(() => deps.readEvents(principal, executionId, cursor));
          if (rows.length === 0) return;
          for (const row of rows) yield* streamResponsesOf(row);
          cursor = rows.at(-1)!.id;
        }
      }
      // Followed until the task ends: input-required is a pause here, not the end.
      yield* follow(executionId, after, (state) => state !== undefined && TERMINAL_STATES.has(state));
    },

    createTaskPushNotificationConfig: (params: TaskPushNotificationConfig) =>
      asA2A(async () => {
        if (!params.url) throw new RequestMalformedError('url is required');
        return attachPush(taskIdOf(params.taskId), params);
      }),

    getTaskPushNotificationConfig: (params: GetTaskPushNotificationConfigRequest) =>
      asA2A(async () => {
        const executionId = taskIdOf(params.taskId);
        if (!UUID.test(params.id))
          throw new TaskNotFoundError(`No push notification config ${params.id.slice(0, 100)}`);
        const [found] = await deps.runCallbacks.ofRun(principal, executionId, params.id);
        if (!found) throw new TaskNotFoundError(`No push notification config ${params.id}`);
        return pushConfigOf(executionId, found);
      }),

    listTaskPushNotificationConfigs: (params: ListTaskPushNotificationConfigsRequest) =>
      asA2A(async () => {
        const executionId = taskIdOf(params.taskId);
        const found = await deps.runCallbacks.ofRun(principal, executionId);
        return { configs: found.map((sub) => pushConfigOf(executionId, sub)), nextPageToken: '' };
      }),

    deleteTaskPushNotificationConfig: (params: DeleteTaskPushNotificationConfigRequest) =>
      asA2A(async () => {
        need(principal, 'runs:write');
        const executionId = taskIdOf(params.taskId);
        if (!UUID.test(params.id) || !(await deps.runCallbacks.removeOfRun(principal, executionId, params.id))) {
          throw new TaskNotFoundError(`No push notification config ${params.id.slice(0, 100)}`);
        }
      }),

    listTasks: (params: ListTasksRequest) => asA2A(() => listTasks(params)),
  };
}
