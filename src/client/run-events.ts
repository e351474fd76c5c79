import type { WeftClientOptions } from './index';
import type { components, operations } from './schema';

/** One event of a run stream, typed by the OpenAPI document's `RunEvent`. */
export type RunEvent = components['schemas']['RunEvent'];

export interface FollowOptions {
  /** Resume after this id (a run's event `id`, or the workspace stream's `seq`). */
  lastEventId?: number;
  /** Stops following (the iterator then ends). */
  signal?: AbortSignal;
  /** Reconnects after a dropped connection this many times, resuming from the last event seen (default 5). */
  reconnects?: number;
}

/** Parses `text/event-stream` blocks into events; comments (keep-alives) are skipped. */
async function* parseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<RunEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
      const data = buffer
        .slice(0, cut)
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join('\n');
      buffer = buffer.slice(cut + 2);
      if (data) yield JSON.parse(data) as RunEvent;
    }
  }
}

async function* stream(
  options: WeftClientOptions,
  path: string,
  cursor: (event: RunEvent) => number,
  follow: FollowOptions,
): AsyncGenerator<RunEvent> {
  let last = follow.lastEventId;
  let reconnects = follow.reconnects ?? 5;
  const doFetch = options.fetch ?? globalThis.fetch;
  for (;;) {
    const response = await doFetch(`${options.baseUrl}${path}`, {
      headers: {
        accept: 'text/event-stream',
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        ...options.headers,
        ...(last !== undefined ? { 'last-event-id': String(last) } : {}),
      },
      ...(follow.signal ? { signal: follow.signal } : {}),
    });
    if (!response.ok || !response.body) {
      throw new Error(`${path}: ${response.status} ${await response.text()}`);
    }
    try {
      for await (const event of parseEvents(response.body)) {
        last = cursor(event);
        yield event;
      }
      // The server ended the stream: a run's ends after run.finished.
      return;
    } catch (error) {
      if (follow.signal?.aborted) return;
      if (reconnects-- <= 0) throw error;
    }
  }
}

/**
 * Follows one run's events (`GET /v1/runs/{execution_id}/events`): everything it recorded, then
 * live, ending after `run.finished`. A dropped connection is resumed with `Last-Event-ID`.
 *
 *   for await (const event of followRun(options, executionId)) console.log(event.type, event.data);
 */
export const followRun = (options: WeftClientOptions, executionId: string, follow: FollowOptions = {}) =>
  stream(options, `/v1/runs/${encodeURIComponent(executionId)}/events`, (event) => event.id, follow);

/** Follows every run of the workspace (`GET /v1/runs/events`) until `signal` aborts. */
export function followWorkspaceRuns(
  options: WeftClientOptions,
  filters: NonNullable<operations['followWorkspaceRuns']['parameters']['query']> = {},
  follow: FollowOptions = {},
) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) if (value !== undefined) query.set(name, String(value));
  const path = `/v1/runs/events${query.size > 0 ? `?${query}` : ''}`;
  return stream(options, path, (event) => event.seq, follow);
}
