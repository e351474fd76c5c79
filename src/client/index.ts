/**
 * Weft's TypeScript client (`weft/client`): openapi-fetch over the types generated from the
 * OpenAPI document (`schema.ts`), so every path, body and answer is typed by the contract.
 *
 *   const weft = createWeftClient({ baseUrl: 'http://127.0.0.1:8080', token: process.env.WEFT_KEY });
 *   const { data, error } = await weft.POST('/v1/ontology/nodes', { body: { type: 'person', name: 'Ada' } });
 *
 * Run event streams (server-sent events) are followed with `followRun(options, executionId)` and
 * `followWorkspaceRuns(options)`, async iterators of typed `RunEvent`s.
 */
import createClient from 'openapi-fetch';
import type { WeftClientOptions } from './options';
import type { components, operations, paths } from './schema';

export type { WeftClientOptions } from './options';
export type { FollowOptions, RunEvent } from './run-events';
export { followRun, followWorkspaceRuns, StreamCredentialError } from './run-events';
export type { components, operations, paths };

/**
 * Read-your-writes with a standby (DATABASE_REPLICA_URL): the client sends back the WAL position its
 * last write answered, so a read right after it sees it. Without a standby no write answers one.
 */
const READ_AFTER = 'Weft-Read-After';

export function createWeftClient(options: WeftClientOptions) {
  const client = createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { ...(options.token ? { authorization: `Bearer ${options.token}` } : {}), ...options.headers },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  let lastWrite: string | undefined;
  client.use({
    onRequest({ request }) {
      if (lastWrite && !request.headers.has(READ_AFTER)) request.headers.set(READ_AFTER, lastWrite);
      return request;
    },
    onResponse({ response }) {
      lastWrite = response.headers.get(READ_AFTER) ?? lastWrite;
      return response;
    },
  });
  return client;
}

export type WeftClient = ReturnType<typeof createWeftClient>;
