import { Worker } from 'node:worker_threads';
import { LIMITS } from '../rules/limits';
import type { FilterResult } from './filter';

/** What the worker gets: the raw body (it parses it, off the event loop) and the rest of the filter's input. */
export interface FilterRequest {
  headers: Record<string, string>;
  body: Buffer;
  contentType: string | undefined;
  trigger: { id: string; slug: string };
  /** The filter reads the parsed body itself, not `{headers, body, trigger}` (approval rules over a step's input). */
  bare?: boolean;
  /**
   * Answer the expression's result itself, as JSON of at most this many characters (a step input's
   * `$from`, issue 40 item 5), instead of its truthiness; a longer result is the `error` outcome.
   */
  selectChars?: number;
  /**
   * Whose evaluation (issue 43 item 3): the pool shares its workers fairly between workspaces, so one
   * workspace's slow filters cannot hold another's up. Unset: one shared queue of their own.
   */
  workspaceId?: string;
}

/** A filter's outcome: matched or not, or `error` with why (a type error, the time or memory budget). */
export interface FilterOutcome {
  result: FilterResult | null;
  error: string | null;
  /** With `selectChars`: the result as JSON (`null` for nothing), when it did not fail. */
  json?: string;
}

// The worker's whole program. It answers only the truthiness (JMESPath's own: false, null, '', [] and
// {} are false), so a huge result never travels back to the event loop. Plain CommonJS evaluated as
// is: no TypeScript loader is needed inside the worker, in tests or in production.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { search } = require(workerData.jmespath);
const truthy = (v) => !(v === false || v === null || v === undefined || v === '' ||
  (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && v !== null && Object.keys(v).length === 0));
// Objects without a prototype, so a filter reading a member the sender did not send (body.constructor)
// sees nothing, not an inherited function.
const plain = (v) => {
  if (Array.isArray(v)) return v.map(plain);
  if (typeof v !== 'object' || v === null) return v;
  const copy = Object.create(null);
  for (const key of Object.keys(v)) copy[key] = plain(v[key]);
  return copy;
};
// The body as parseBodyForFilter (filter.ts) reads it; test/unit/webhook-signature.test.ts holds them equal.
const parseBody = (bytes, contentType) => {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  const type = (contentType || '').split(';')[0].trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') {
    const form = Object.create(null);
    for (const [key, value] of new URLSearchParams(text)) {
      const earlier = Object.hasOwn(form, key) ? form[key] : undefined;
      form[key] = earlier === undefined ? value : Array.isArray(earlier) ? [...earlier, value] : [earlier, value];
    }
    return form;
  }
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  return plain(parsed);
};
parentPort.on('message', ({ expression, request }) => {
  try {
    const body = parseBody(request.body, request.contentType);
    const input = request.bare ? body : { headers: plain(request.headers), body, trigger: request.trigger };
    const result = search(input, expression);
    if (!request.selectChars) return parentPort.postMessage({ matched: truthy(result) });
    const json = JSON.stringify(result === undefined ? null : result);
    if (json.length > request.selectChars) {
      const why = 'filter_budget: the result is longer than ' + request.selectChars + ' characters';
      return parentPort.postMessage({ error: why });
    }
    parentPort.postMessage({ matched: truthy(result), json });
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message ? error.message : error).slice(0, 500) });
  }
});`;

interface Task {
  expression: string;
  request: FilterRequest;
  resolve: (outcome: FilterOutcome) => void;
  /** The workspace it is queued and counted under ('' when the caller named none). */
  tenant: string;
}

/**
 * The tasks waiting for a worker, a queue per workspace (issue 43 item 3, review NM-8): `take` answers
 * the next task of the workspace with the fewest running now, the longest unserved among equals
 * (round-robin), so a workspace that floods the pool waits behind everyone else's next task.
 */
function createFairQueue(limits: { queue: number; queuePerWorkspace: number }) {
  // Insertion order is the round-robin order: a workspace served moves to the back.
  const queues = new Map<string, Task[]>();
  const running = new Map<string, number>();
  let waiting = 0;
  return {
    /** Whether one more task of `tenant` may wait: within its share, and the whole unless it has none waiting. */
    admits(tenant: string): boolean {
      const own = queues.get(tenant)?.length ?? 0;
      return own < limits.queuePerWorkspace && (own === 0 || waiting < limits.queue);
    },
    push(task: Task) {
      const queue = queues.get(task.tenant);
      if (queue) queue.push(task);
      else queues.set(task.tenant, [task]);
      waiting++;
    },
    take(): Task | undefined {
      let chosen: string | undefined;
      for (const tenant of queues.keys()) {
        if (chosen === undefined || (running.get(tenant) ?? 0) < (running.get(chosen) ?? 0)) chosen = tenant;
      }
      if (chosen === undefined) return undefined;
      const queue = queues.get(chosen)!;
      const task = queue.shift()!;
      queues.delete(chosen);
      if (queue.length > 0) queues.set(chosen, queue);
      waiting--;
      return task;
    },
    started(tenant: string) {
      running.set(tenant, (running.get(tenant) ?? 0) + 1);
    },
    ended(tenant: string) {
      const left = (running.get(tenant) ?? 1) - 1;
      if (left > 0) running.set(tenant, left);
      else running.delete(tenant);
    },
    drain(): Task[] {
      const all = [...queues.values()].flat();
      queues.clear();
      waiting = 0;
      return all;
    },
  };
}

interface Slot {
  worker: Worker;
  task?: Task;
  timer?: NodeJS.Timeout;
}

const failed = (error: string): FilterOutcome => ({ result: 'error', error });

/**
 * Evaluates trigger filters off the event loop (review H-2), parsing the body there too: a small
 * pool of worker threads, each with its own heap limit and a per-evaluation deadline. A filter that
 * runs past the deadline has its worker terminated; one that exhausts the heap kills only its
 * worker. Either way the delivery gets the `error` outcome and the pool replaces the worker, so a
 * hostile expression costs at most `timeoutMs` of one worker's CPU and `heapMb` of memory, and the
 * API's event loop never waits on it.
 */
export function createFilterPool(
  options: { size: number; timeoutMs: number; heapMb: number; queue: number; queuePerWorkspace: number } = LIMITS
    .webhook.filter,
) {
  const slots: (Slot | undefined)[] = Array.from({ length: options.size }, () => undefined);
  const waiting = createFairQueue(options);
  const jmespath = require.resolve('jmespath');
  let closed = false;

  function spawn(index: number): Slot {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { jmespath },
      resourceLimits: { maxOldGenerationSizeMb: options.heapMb, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
    });
    // An idle pool must not keep the process alive.
    worker.unref();
    const slot: Slot = { worker };
    worker.on('message', (message: { matched?: boolean; error?: string; json?: string }) => {
      const outcome = message.error === undefined ? outcomeOf(message.matched === true) : failed(message.error);
      finish(index, slot, message.json === undefined ? outcome : { ...outcome, json: message.json });
    });
    worker.on('error', (error: Error & { code?: string }) => {
      const why =
        error.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `filter_budget: the filter exceeded ${options.heapMb} MB`
          : `filter_failed: ${error.message}`;
      retire(index, slot, failed(why));
    });
    worker.on('exit', () => retire(index, slot, failed('filter_failed: the filter worker stopped')));
    slots[index] = slot;
    return slot;
  }

  const outcomeOf = (matched: boolean): FilterOutcome => ({
    result: matched ? 'matched' : 'not_matched',
    error: null,
  });

  function finish(index: number, slot: Slot, outcome: FilterOutcome) {
    const task = slot.task;
    if (slot.timer) clearTimeout(slot.timer);
    slot.task = undefined;
    slot.timer = undefined;
    if (task) waiting.ended(task.tenant);
    task?.resolve(outcome);
    if (slots[index] === slot) next(index);
  }

  /** The worker is gone (or going): answer its task, and free the slot for a fresh worker. */
  function retire(index: number, slot: Slot, outcome: FilterOutcome) {
    if (slots[index] !== slot) return;
    slots[index] = undefined;
    void slot.worker.terminate();
    finish(index, slot, outcome);
    next(index);
  }

  function run(index: number, task: Task) {
    const slot = slots[index] ?? spawn(index);
    slot.task = task;
    waiting.started(task.tenant);
    slot.worker.ref();
    slot.timer = setTimeout(
      () => retire(index, slot, failed(`filter_budget: the filter ran longer than ${options.timeoutMs} ms`)),
      options.timeoutMs,
    );
    try {
      slot.worker.postMessage({ expression: task.expression, request: task.request });
    } catch (error) {
      // An input the structured clone refuses (nesting too deep, say) is the filter's error, not ours.
      finish(index, slot, failed(`filter_failed: ${error instanceof Error ? error.message : String(error)}`));
    }
  }

  function next(index: number) {
    const slot = slots[index];
    if (slot?.task) return;
    slot?.worker.unref();
    if (closed) return;
    const task = waiting.take();
    if (task) run(index, task);
  }

  return {
    /** The filter over `{headers, body, trigger}` (contract 4.6 rule 4), the body parsed in the worker. */
    evaluate(expression: string, request: FilterRequest): Promise<FilterOutcome> {
      if (closed) return Promise.resolve(failed('filter_failed: shutting down'));
      return new Promise((resolve) => {
        const task: Task = { expression, request, resolve, tenant: request.workspaceId ?? '' };
        const free = slots.findIndex((slot) => !slot?.task);
        if (free >= 0) return run(free, task);
        // A burst beyond what the pool can take is refused, not queued without end: beyond the
        // workspace's share of the queue, or the whole queue when the workspace already has one waiting.
        if (!waiting.admits(task.tenant)) return resolve(failed('filter_busy: too many filters waiting'));
        waiting.push(task);
      });
    },
    async close(): Promise<void> {
      closed = true;
      for (const task of waiting.drain()) task.resolve(failed('filter_failed: shutting down'));
      await Promise.all(slots.map((slot) => slot?.worker.terminate()));
    },
  };
}

export type FilterPool = ReturnType<typeof createFilterPool>;
