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

export function createWeftClient(options: WeftClientOptions) {
  return createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { ...(options.token ? { authorization: `Bearer ${options.token}` } : {}), ...options.headers },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}

export type WeftClient = ReturnType<typeof createWeftClient>;
