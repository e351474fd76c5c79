import { responseValidator } from './openapi-validator';
import { getStack } from './stack';

export interface SseEvent {
  event: string;
  data: any;
}

/** Parses a complete text/event-stream body into its events. */
export function parseSse(text: string): SseEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim())
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
