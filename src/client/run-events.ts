import type { WeftClientOptions } from './options';
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

/**
 * A stream the server ended because its credential no longer stands (revoked, expired, or its user left
 * the workspace): `code` is the final `error` event's `error_code`. Reconnecting would not help.
 */
export class StreamCredentialError extends Error {
  constructor(
    readonly code: 'credential_revoked' | 'credential_expired' | 'member_removed',
    detail: string,
  ) {
    super(detail);
    this.name = 'StreamCredentialError';
  }
}

/** A stream's final events (the routes' descriptions): its credential lapsed, or it reached its lifetime. */
interface CredentialLapsed {
  status: 401;
  detail: string;
  error_code: StreamCredentialError['code'];
}
interface Reconnect {
  detail: string;
  last_event_id: number;
}

type Frame = { event: string; data: RunEvent | CredentialLapsed | Reconnect };

/** Parses `text/event-stream` blocks into events; comments (keep-alives) are skipped. */
async function* parseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<Frame> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
      const lines = buffer.slice(0, cut).split('\n');
      buffer = buffer.slice(cut + 2);
      const data = lines
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join('\n');
      const event = lines.find((line) => line.startsWith('event: '))?.slice(7) ?? 'message';
      if (data) yield { event, data: JSON.parse(data) } as Frame;
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
    let ending: Frame | undefined;
    try {
      for await (const frame of parseEvents(response.body)) {
        if (frame.event === 'error' || frame.event === 'reconnect') {
          ending = frame;
          break;
        }
        const event = frame.data as RunEvent;
        last = cursor(event);
        yield event;
      }
    } catch (error) {
      if (follow.signal?.aborted) return;
      if (reconnects-- <= 0) throw error;
      continue;
    }
    if (ending?.event === 'error') {
      const { error_code, detail } = ending.data as CredentialLapsed;
      throw new StreamCredentialError(error_code, detail);
    }
    // The stream reached its lifetime: resume where it ended (not a failure, so no reconnect is spent).
    if (ending?.event === 'reconnect') {
      last = (ending.data as Reconnect).last_event_id;
      continue;
    }
    // The server ended the stream: a run's ends after run.finished.
    return;
  }
}

/**
 * Follows one run's events (`GET /v1/runs/{execution_id}/events`): everything it recorded, then
 * live, ending after `run.finished`. A dropped connection, or a stream that reached its lifetime, is
 * resumed with `Last-Event-ID`; a credential that no longer stands throws `StreamCredentialError`.
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
