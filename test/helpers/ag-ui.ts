import { HttpAgent } from '@ag-ui/client';
import { EventSchemas } from '@ag-ui/core/schemas';
import { getStack } from './stack';

/** Every `data:` line of an AG-UI stream, parsed by `@ag-ui/core`'s own event schemas (a failure throws). */
export const parsedEvents = (text: string) =>
  text
    .split('\n\n')
    .flatMap((block) => block.split('\n').filter((line) => line.startsWith('data: ')))
    .map((line) => EventSchemas.parse(JSON.parse(line.slice(6))));

/** Event types, a CUSTOM event by its name: `CUSTOM:weft.approval_requested`. */
export const typesOf = (events: { type: string; name?: string }[]) =>
  events.map((event) => (event.type === 'CUSTOM' ? `CUSTOM:${event.name}` : event.type));

/**
 * An HttpAgent of the official client against `POST /v1/ag-ui`, with the bearer header; the raw
 * response text of each of its runs is kept (in order), so that every event Weft sent can be
 * checked, not only those the client passes on.
 */
export function agentOf(token: string, goal: string, threadId?: string) {
  const raw: Promise<string>[] = [];
  const agent = new HttpAgent({
    url: `${getStack().baseUrl}/v1/ag-ui`,
    headers: { Authorization: `Bearer ${token}` },
    initialMessages: [{ id: 'm1', role: 'user', content: goal }],
    ...(threadId ? { threadId } : {}),
    fetch: async (url, init) => {
      const response = await fetch(url, init);
      raw.push(response.clone().text());
      return response;
    },
  });
  return { agent, raw };
}

/** What a refused request's HttpAgent rejected with: the HTTP status and the problem+json body. */
export async function refusal(run: Promise<unknown>): Promise<{ status: number; problem: any }> {
  try {
    await run;
  } catch (error) {
    const { status, payload } = error as { status?: number; payload?: unknown };
    if (status === undefined) throw error;
    return { status, problem: typeof payload === 'string' ? JSON.parse(payload) : payload };
  }
  throw new Error('the run was not refused');
}
