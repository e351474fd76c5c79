import { responseValidator } from './openapi-validator';
import { getStack } from './stack';

export interface SseEvent {
  event: string;
  data: any;
}

/** Parses a complete text/event-stream body into its events (comments, such as `: stream open`, are skipped). */
export function parseSse(text: string): SseEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.split('\n').some((line) => line.trim() && !line.startsWith(':')))
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((line) => line.startsWith('event: '))?.slice(7) ?? 'message';
      const data = lines
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join('\n');
      return { event, data: data ? JSON.parse(data) : undefined };
    });
}

/** POSTs and reads the whole event stream; the status and media type are checked against the OpenAPI document. */
export async function postStream(path: string, token: string, body: unknown, baseUrl = getStack().baseUrl) {
  const response = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const isStream = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  const json = isStream ? undefined : JSON.parse(text);
  const contentType = response.headers.get('content-type');
  (await responseValidator(getStack().baseUrl)).check({
    method: 'POST',
    path,
    status: response.status,
    contentType,
    text,
    body: json,
  });
  return { status: response.status, headers: response.headers, events: isStream ? parseSse(text) : [], json };
}

export interface SseFrame {
  id: string | null;
  event: string;
  data: any;
}

/**
 * A live SSE client over real HTTP (GET): collects each event as it arrives, and the comments
 * (keep-alives) it saw. `until` waits for an event matching `match`; `ended` resolves when the
 * server closes the stream. The status is checked against the OpenAPI document like any response.
 */
export async function openSse(path: string, token: string, options: { lastEventId?: string; baseUrl?: string } = {}) {
  const baseUrl = options.baseUrl ?? getStack().baseUrl;
  const abort = new AbortController();
  const response = await fetch(`${baseUrl}${path}`, {
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'text/event-stream',
      ...(options.lastEventId !== undefined ? { 'last-event-id': options.lastEventId } : {}),
    },
    signal: abort.signal,
  });
  const contentType = response.headers.get('content-type');
  if (!(contentType ?? '').startsWith('text/event-stream')) {
    const text = await response.text();
    const json = text ? JSON.parse(text) : undefined;
    (await responseValidator(getStack().baseUrl)).check({
      method: 'GET',
      path,
      status: response.status,
      contentType,
      text,
      body: json,
    });
    return {
      status: response.status,
      json,
      events: [] as SseFrame[],
      comments: [] as string[],
      until: (_match: (frame: SseFrame) => boolean, what: string): Promise<SseFrame> =>
        Promise.reject(new Error(`no stream (${response.status}) for ${what}`)),
      ended: async (_timeoutMs?: number): Promise<SseFrame[]> => [],
      close: () => {},
    };
  }
  const events: SseFrame[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  let buffer = '';
  let done = false;
  const ended = (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let cut = buffer.indexOf('\n\n');
        while (cut >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const lines = block.split('\n');
          const fields = (name: string) =>
            lines.filter((line) => line.startsWith(`${name}: `)).map((line) => line.slice(name.length + 2));
          const data = fields('data').join('\n');
          if (data)
            events.push({
              id: fields('id')[0] ?? null,
              event: fields('event')[0] ?? 'message',
              data: JSON.parse(data),
            });
          else comments.push(...lines.filter((line) => line.startsWith(':')));
          for (const wake of waiters) wake();
          cut = buffer.indexOf('\n\n');
        }
      }
    } catch {
      // Aborted by close().
    } finally {
      done = true;
      for (const wake of waiters) wake();
    }
  })();
  /** Resolves with the first event matching `match` (waiting up to `timeoutMs`). */
  const until = (match: (frame: SseFrame) => boolean, what: string, timeoutMs = 30_000) =>
    new Promise<SseFrame>((resolve, reject) => {
      const check = () => {
        const found = events.find(match);
        if (found || done) {
          waiters.delete(check);
          clearTimeout(timer);
          if (found) resolve(found);
          else reject(new Error(`stream ended before ${what}`));
        }
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`timed out waiting for ${what}; saw ${events.map((e) => e.event).join(', ')}`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });
  return {
    status: response.status,
    json: undefined as unknown,
    events,
    comments,
    until,
    /** Resolves once the server has ended the stream (or rejects after `timeoutMs`). */
    ended: (timeoutMs = 30_000) =>
      Promise.race([
        ended.then(() => events),
        new Promise<never>((_, reject) =>
          setTimeout(
            () => reject(new Error(`stream still open; saw ${events.map((e) => e.event).join(', ')}`)),
            timeoutMs,
          ).unref(),
        ),
      ]),
    close: () => abort.abort(),
  };
}
