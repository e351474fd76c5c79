import type { Event } from '@ag-ui/core';
import { EventType } from '@ag-ui/core';
import { EventEncoder } from '@ag-ui/encoder';
import type { StreamEnding } from '../platform/api/sse';
import type { ScopedRead } from '../platform/db/unit-of-work';
import type { RunStreamFormat } from '../runs/event-stream';
import type { LoggedEvent, RunView } from './events';
import { agUiEvents, customName, runStarted, stepName } from './events';
import { askedId, interruptOf, pendingInputs } from './interrupts';

/** The run tag that names the AG-UI thread a run was started in (`POST /v1/ag-ui`). */
export const THREAD_TAG = 'ag-ui-thread:';

const encoder = new EventEncoder();

/**
 * A stream that ends early says so in AG-UI's words: a lapsed credential is RUN_ERROR with its
 * `error_code`, the lifetime a CUSTOM `weft.reconnect` whose `id:` is the Last-Event-ID to resume from.
 */
const AG_UI_ENDING: StreamEnding = {
  lapsed: (body) => encoder.encodeSSE({ type: EventType.RUN_ERROR, message: body.detail, code: body.error_code }),
  reconnect: (body) => {
    const event = encoder.encodeSSE({ type: EventType.CUSTOM, name: customName('reconnect'), value: body });
    return `id: ${body.last_event_id}\n${event}`;
  },
};

/**
 * How a stream of `POST /v1/ag-ui` differs from a watcher's (`?format=ag-ui`): with `interrupts`, it
 * ends at the first approval or `run.wait_for` waitpoint still open when it is streamed (except those
 * in `skip`: answered, or set aside by the client) with RUN_FINISHED `outcome: interrupt`; with
 * `announce`, it opens with RUN_STARTED (and STEP_STARTED for the steps open at its cursor) wherever
 * in the run it starts: a new AG-UI run of the same Weft run, after a resume.
 */
export interface AgUiStreamOptions {
  interrupts?: { skip: ReadonlySet<string> };
  announce?: boolean;
}

interface RunStart {
  tags: string[];
  /** Steps started at or before the stream's cursor and not finished by then. */
  open: { step_id: string; step_no: number; tool: string }[];
}

/**
 * Run event streams in AG-UI's words (issue 42 item 3): each page of the run's log becomes the AG-UI
 * events of `agUiEvents`, encoded with `@ag-ui/encoder` as SSE `data:` lines, the last of each run
 * event's with `id:` its id, so a client resumes with Last-Event-ID as on Weft's own stream. The
 * thread is the one the run was started in (its `ag-ui-thread:` tag), else the run's own id; the
 * AG-UI run id is the execution id. Reads go through the stream's scope, so they re-check its credential.
 */
export function createAgUiFormat(deps: { read: ScopedRead }, options: AgUiStreamOptions = {}): RunStreamFormat {
  const { read } = deps;
  const { interrupts } = options;
  return {
    async start(scope, executionId, after) {
      // A resumed stream knows which steps are open from the log before its cursor.
      const [run] = await read<RunStart>(
        scope,
        `SELECT e.tags, coalesce((
           SELECT json_agg(json_build_object('step_id', s.data->>'step_id', 'step_no', s.data->'step_no',
                                             'tool', s.data->>'tool') ORDER BY s.id)
           FROM run_events s
           WHERE s.execution_id = e.id AND s.id <= $2::int AND s.type = 'step.started'
             AND NOT EXISTS (SELECT 1 FROM run_events f
                             WHERE f.execution_id = e.id AND f.id <= $2::int
                               AND f.type IN ('step.completed', 'step.failed')
                               AND f.data->>'step_id' = s.data->>'step_id')), '[]'::json) AS open
         FROM run_executions e WHERE e.id = $1::uuid`,
        [executionId, after],
      );
      const thread = run?.tags.find((tag) => tag.startsWith(THREAD_TAG))?.slice(THREAD_TAG.length);
      const open = new Map((run?.open ?? []).map((step) => [step.step_id, stepName(step.step_no, step.tool)]));
      const view: RunView = { threadId: thread ?? executionId, runId: executionId, open, inputs: new Map() };
      let announced = !options.announce;
      let stopped = false;
      /** The events of `row`, and whether they end the stream with an interrupt. */
      const eventsOf = async (row: LoggedEvent) => {
        const timestamp = Date.parse(row.created_at);
        const events: Event[] = [];
        if (!announced) {
          announced = true;
          if (row.id !== 1) {
            events.push(runStarted(view, timestamp));
            for (const name of view.open.values())
              events.push({ type: EventType.STEP_STARTED, timestamp, stepName: name });
          }
        }
        events.push(...agUiEvents(view, row));
        const asked = interrupts && askedId(row.type, row.data);
        if (!asked || interrupts.skip.has(asked)) return events;
        // Asked and still open as it is streamed (not answered already): the AG-UI run ends here, the Weft run waits.
        const open = (await pendingInputs(read, scope, executionId)).filter((input) => !interrupts.skip.has(input.id));
        if (!open.some((input) => input.id === asked)) return events;
        stopped = true;
        // A run.wait_for step is open while it waits: AG-UI ends no run with a step active.
        for (const name of view.open.values())
          events.push({ type: EventType.STEP_FINISHED, timestamp, stepName: name });
        events.push({
          type: EventType.RUN_FINISHED,
          timestamp,
          threadId: view.threadId,
          runId: view.runId,
          outcome: { type: 'interrupt', interrupts: open.map((input) => interruptOf(executionId, input)) },
        });
        return events;
      };
      return {
        ending: AG_UI_ENDING,
        ended: () => stopped,
        async encode(page) {
          const started = page.filter((row) => row.type === 'step.started').map((row) => String(row.data.step_id));
          view.inputs = new Map(
            started.length === 0
              ? []
              : (
                  await read<{ id: string; input: unknown }>(
                    scope,
                    `SELECT id, input FROM run_steps WHERE execution_id = $1::uuid AND id = ANY ($2::uuid[])`,
                    [executionId, `{${started.join(',')}}`],
                  )
                ).map((step) => [step.id, step.input]),
          );
          let text = '';
          for (const row of page) {
            const frames = (await eventsOf(row)).map((event) => encoder.encodeSSE(event));
            if (frames.length > 0) frames[frames.length - 1] = `id: ${row.id}\n${frames.at(-1)}`;
            text += frames.join('');
            if (stopped) break;
          }
          return text;
        },
      };
    },
  };
}
