// Every call goes to this origin's public /v1 API with the pasted credential: the console can do
// nothing the API would not allow that credential to do.
const KEY = 'weft.console.credential';

export const credential = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  clear: () => sessionStorage.removeItem(KEY),
};

/** An answer other than 2xx, with the contract's `detail` made readable. */
export class ApiError extends Error {
  constructor(status, body) {
    super(detailText(body) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

/** `{detail}` is a string, a list of 422 issues, or an object (402); each becomes one line of text. */
export function detailText(body) {
  const detail = body && typeof body === 'object' ? body.detail : body;
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) return detail.map((issue) => `${(issue.loc || []).join('.')}: ${issue.msg}`).join('; ');
  if (detail && typeof detail === 'object') return detail.message || detail.error || JSON.stringify(detail);
  return '';
}

let onUnauthorized = () => {};
/** Called when the API refuses the stored credential (401): the app goes back to the sign-in form. */
export const whenUnauthorized = (handler) => {
  onUnauthorized = handler;
};

/** One API call; resolves to the parsed body, rejects with ApiError. */
export async function api(method, path, body, token = credential.get()) {
  const headers = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let parsed = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // Not JSON (a proxy's error page): keep the text.
  }
  if (!response.ok) {
    const error = new ApiError(response.status, parsed);
    if (response.status === 401 && token === credential.get()) onUnauthorized(error);
    throw error;
  }
  return parsed;
}

export const query = (params) => {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== '') search.set(key, value);
  const text = search.toString();
  return text ? `?${text}` : '';
};

/**
 * Follows a server-sent event stream of the API (the run event streams) with the stored credential:
 * fetch, not EventSource, which cannot send an Authorization header. Calls `onEvent(data)` for each
 * event; a dropped connection is resumed with Last-Event-ID after a second, a stream that reached its
 * lifetime (`reconnect`) at once. Resolves when the server ends the stream; `signal` stops it; a
 * credential that no longer stands (the stream's final `error` event) rejects with an ApiError (401).
 */
export async function follow(path, onEvent, signal) {
  let lastEventId = null;
  connect: while (!signal.aborted) {
    const headers = { accept: 'text/event-stream', authorization: `Bearer ${credential.get()}` };
    if (lastEventId !== null) headers['last-event-id'] = lastEventId;
    try {
      const response = await fetch(path, { headers, signal });
      if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
          const lines = buffer.slice(0, cut).split('\n');
          buffer = buffer.slice(cut + 2);
          const id = lines.find((line) => line.startsWith('id: '));
          const data = lines.find((line) => line.startsWith('data: '));
          const event = lines.find((line) => line.startsWith('event: '))?.slice(7);
          if (id) lastEventId = id.slice(4);
          if (!data) continue;
          if (event === 'error') throw new ApiError(401, JSON.parse(data.slice(6)));
          if (event === 'reconnect') {
            await reader.cancel();
            continue connect;
          }
          onEvent(JSON.parse(data.slice(6)));
        }
      }
    } catch (error) {
      if (signal.aborted || error instanceof ApiError) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}
