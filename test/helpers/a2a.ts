import type { Message, StreamResponse, Task } from '@a2a-js/sdk';
import { Role, TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { getStack } from './stack';

/** `fetch` carrying a Weft bearer credential, as an A2A client's auth would add it. */
export const bearerFetch =
  (token: string): typeof fetch =>
  (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('Authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };

/**
 * The official client, discovered from the card: `@a2a-js/sdk`'s resolver fetches
 * `/.well-known/agent-card.json` and its factory picks the JSON-RPC interface the card names.
 * `polling`: SendMessage answers at once (`returnImmediately`) instead of blocking.
 */
export async function a2aClient(token: string, options: { polling?: boolean; baseUrl?: string } = {}): Promise<Client> {
  const fetchImpl = bearerFetch(token);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      clientConfig: { polling: options.polling ?? false },
    }),
  );
  return factory.createFromUrl(options.baseUrl ?? getStack().baseUrl);
}

let sequence = 0;

/** A user message: text, or a data part; `taskId` makes it a reply to that task. */
export function userMessage(content: string | Record<string, unknown>, extra: Partial<Message> = {}): Message {
  sequence += 1;
  return {
    messageId: `test-${process.pid}-${Date.now()}-${sequence}`,
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [
      typeof content === 'string'
        ? { content: { $case: 'text', value: content }, metadata: undefined, filename: '', mediaType: 'text/plain' }
        : {
            content: { $case: 'data', value: content },
            metadata: undefined,
            filename: '',
            mediaType: 'application/json',
          },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}

/** A SendMessage request for the client. */
export const sendRequest = (message: Message) => ({
  tenant: '',
  message,
  configuration: undefined,
  metadata: undefined,
});

/** The task a SendMessage answered (Weft always answers a task, never a bare message). */
export function asTask(result: Message | Task): Task {
  if (!('status' in result)) throw new Error('expected a task, got a message');
  return result;
}

/** Collects a stream's items until it ends. */
export async function collect(stream: AsyncGenerator<StreamResponse, void, undefined>): Promise<StreamResponse[]> {
  const items: StreamResponse[] = [];
  for await (const item of stream) items.push(item);
  return items;
}

/** The states a stream's status updates report, in order. */
export const statesOf = (items: StreamResponse[]) =>
  items.flatMap((item) =>
    item.payload?.$case === 'statusUpdate' ? [TaskState[item.payload.value.status!.state]] : [],
  );
