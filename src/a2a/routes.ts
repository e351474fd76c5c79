import type { AgentCard as AgentCardType } from '@a2a-js/sdk';
import { A2A_VERSION_HEADER, AgentCard } from '@a2a-js/sdk';
import { isV1JsonRpcMethod } from '@a2a-js/sdk/compat/v0_3';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { A2A_ERROR_CODE } from '@a2a-js/sdk/errors';
import { JsonRpcTransportHandler, ServerCallContext, validateVersion } from '@a2a-js/sdk/server';
import type { Context } from 'koa';
import { HttpError } from '../platform/api/errors';
import { defineRoute, RouteAnswer } from '../platform/api/route';
import type { EventStreams } from '../platform/api/sse';
import { TOO_MANY_STREAMS } from '../platform/api/sse';
import type { Config } from '../platform/config';
import { API_VERSION } from '../platform/openapi/document';
import { LIMITS } from '../rules/limits';
import { readRawBody } from '../triggers/raw-body';
import { A2A_PATH, AGENT_CARD_PATH, agentCard } from './card';
import type { A2ADeps } from './handler';
import { createA2AHandler } from './handler';
import { A2AResponseBody, A2AStreamEvent, AgentCardBody } from './schemas';
import { streamA2A } from './stream';

/** JSON, and A2A's own media type for it. */
const MEDIA_TYPES = ['application/json', 'application/a2a+json'];

/** As the JSON parser's limit (JSON_BODY_LIMIT). */
const BODY_LIMIT = 1024 * 1024;

const rpcError = (id: unknown, code: number, message: string) => ({
  jsonrpc: '2.0',
  id: id ?? null,
  error: { code, message },
});

const cardOf = (config: Pick<Config, 'PUBLIC_URL'>, ctx: Context): AgentCardType =>
  agentCard(config.PUBLIC_URL || `${ctx.protocol}://${ctx.host}`, API_VERSION);

/** The requested protocol: the header's, else 1.0 for a 1.0 method name, else 0.3 (as the SDK's own server). */
function versionOf(ctx: Context, method: unknown): string {
  const header = ctx.get(A2A_VERSION_HEADER);
  if (header) return header;
  return typeof method === 'string' && isV1JsonRpcMethod(method) ? '1.0' : '0.3';
}

/** What the routes need besides the handler's services: the card's origin, the streams and their keep-alive. */
export type A2ARouteDeps = A2ADeps & {
  config: Pick<Config, 'PUBLIC_URL' | 'RUN_EVENTS_KEEPALIVE_MS'>;
  streams: EventStreams;
};

export const a2aRoutes = (deps: A2ARouteDeps) => [
  defineRoute({
    method: 'get',
    path: AGENT_CARD_PATH,
    operationId: 'getAgentCard',
    summary: 'The A2A Agent Card: Weft as an agent, its JSON-RPC endpoint, skills and security',
    description:
      'Public. Names `POST /a2a` (JSON-RPC, A2A 1.0 and 0.3), capabilities `{streaming: true, pushNotifications: ' +
      'true}`, the bearer security scheme (API key, user JWT or MCP token, with the REST API’s scopes), the ' +
      '`oauth` scheme (an OAuth access token for the `/a2a` resource, from Weft’s OAuth server) and a ' +
      'skill per agent: `llm` and the playbook templates `search`, `remember` (waits for approval) and ' +
      '`credits-balance`. Its URLs are PUBLIC_URL’s, else the request’s origin.',
    tags: ['a2a'],
    public: true,
    response: AgentCardBody,
    handler: async ({ ctx }) => AgentCard.toJSON(cardOf(deps.config, ctx)) as never,
  }),
  defineRoute({
    method: 'post',
    path: A2A_PATH,
    operationId: 'a2aMessage',
    summary: 'The A2A JSON-RPC endpoint: runs as A2A tasks (send, stream, get, cancel, push configs)',
    description:
      'An A2A JSON-RPC request (A2A 1.0 as `@a2a-js/sdk` 1.3 speaks it; 0.3 with `A2A-Version: 0.3`). A task is a ' +
      'run (its id the `execution_id`). `SendMessage`: a message’s text becomes an `llm` run’s goal (or a ' +
      'playbook template’s input with `metadata.skill`; `metadata.approval`, `metadata.max_steps`); the message ' +
      'id is its idempotency key. Blocking unless `configuration.returnImmediately`: it waits for the run to ' +
      `finish or ask for input, at most ${LIMITS.a2a.blockingWaitSeconds} s. A message with the \`taskId\` of a ` +
      'run that waits answers it: text "approve"/"reject" (or a data part, `POST /v1/approvals/{id}/resolve`’s ' +
      'body) resolves its pending approval (approvals:write; separation of duties applies: the dispatching ' +
      'credential is refused), other text to an llm run is RESPOND; a data part or text completes its `event` ' +
      'waitpoint. `SendStreamingMessage` answers SSE: the task, then status and artifact updates from the run’s ' +
      'event log until it ends or asks for input; `SubscribeToTask` follows until it ends, resumable with ' +
      '`Last-Event-ID` (each event’s SSE `id:`). States: QUEUED/RUNNING → working, AWAITING_APPROVAL or an event ' +
      'waitpoint → input-required, SUCCEEDED → completed, FAILED → failed, CANCELLED → canceled. Artifacts: each ' +
      'step’s output (`step-<n>`) and the final answer (`answer`). Push configs are the run’s own callbacks ' +
      '(signed with `X-Service-Signature`; the signing secret is the created config’s `token`, shown once). ' +
      '`ListTasks` (1.0): the workspace’s runs as tasks, newest first, paged as `GET /v1/runs` (`pageToken` is ' +
      'its cursor; history and artifacts only with `historyLength` or `includeArtifacts`). ' +
      'Scopes as the REST routes: runs:write to send and cancel, runs:read to get, list and subscribe. ' +
      'Credentials: an API key, user JWT or MCP token, or an OAuth access token issued for this resource ' +
      '(RFC 8707; a `/mcp` one is 401 here). Bad JSON, an ' +
      'unknown method or bad params are JSON-RPC errors (HTTP 200); another workspace’s task is -32001.',
    tags: ['a2a'],
    rawBody: {
      mediaTypes: MEDIA_TYPES,
      description: 'One JSON-RPC request (`A2ARequest`).',
      example: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'find the billing module' }] },
          configuration: { returnImmediately: true },
        },
      }),
    },
    produces: { 'application/json': A2AResponseBody, 'text/event-stream': A2AStreamEvent },
    errors: {
      413: `The body is larger than ${BODY_LIMIT / 1024 / 1024} MiB`,
      415: `Content-Type is neither ${MEDIA_TYPES.join(' nor ')}`,
      429: TOO_MANY_STREAMS,
    },
    handler: async ({ auth, ctx }) => {
      const sent = ctx.get('Content-Type');
      if (sent && !ctx.is(MEDIA_TYPES)) {
        throw new HttpError(
          415,
          `Content-Type ${sent.slice(0, 100)} is not accepted; send ${MEDIA_TYPES.join(' or ')}`,
        );
      }
      const raw = await readRawBody(ctx.req, BODY_LIMIT);
      if (!raw) {
        ctx.set('Connection', 'close');
        return new RouteAnswer(413, { detail: `The body is larger than ${BODY_LIMIT} bytes` });
      }
      let body: { id?: unknown; method?: unknown };
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return new RouteAnswer(200, rpcError(null, A2A_ERROR_CODE.PARSE_ERROR, 'Invalid JSON payload.'));
      }
      const id = typeof body === 'object' && body !== null && !Array.isArray(body) ? body.id : null;
      const version = versionOf(ctx, body?.method);
      const card = cardOf(deps.config, ctx);
      const aborted = new AbortController();
      const lastEventId = /^\d{1,15}$/.test(ctx.get('Last-Event-ID')) ? Number(ctx.get('Last-Event-ID')) : undefined;
      const handler = createA2AHandler(deps, { principal: auth, card, lastEventId, signal: aborted.signal });
      const context = new ServerCallContext({ requestedVersion: version });
      try {
        validateVersion(context.requestedVersion, card, 'JSONRPC');
      } catch (error) {
        return new RouteAnswer(200, rpcError(id, A2A_ERROR_CODE.VERSION_NOT_SUPPORTED, (error as Error).message));
      }
      const transport =
        version === '0.3' ? new LegacyJsonRpcTransportHandler(handler) : new JsonRpcTransportHandler(handler);
      const answer = await transport.handle(body as Record<string, unknown>, context);
      if (!(Symbol.asyncIterator in answer)) return new RouteAnswer(200, answer);
      return streamA2A(ctx, auth, answer, {
        id,
        aborted,
        streams: deps.streams,
        logger: deps.logger,
        keepAliveMs: deps.config.RUN_EVENTS_KEEPALIVE_MS,
        mapError:
          version === '0.3'
            ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError
            : JsonRpcTransportHandler.mapToJSONRPCError,
      });
    },
  }),
];
