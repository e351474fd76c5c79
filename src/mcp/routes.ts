import type { Context, Middleware } from 'koa';
import { HttpError } from '../platform/api/errors';
import { defineRoute } from '../platform/api/route';
import type { Config } from '../platform/config';
import { LIMITS } from '../rules/limits';
import { JsonRpcErrorBody, McpRequestBody, McpResponseBody } from './schemas';
import type { McpService } from './service';

/** The request headers the Streamable HTTP transport reads; the credential was checked before it runs. */
const TRANSPORT_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id'];

/**
 * The request as the SDK's Web-standard transport reads it: its method, URL and headers, nothing else
 * (the body is handed over parsed). Not a `Request`: building one (its URL, signal and body state) was
 * a good part of the MCP layer's cost per call, for members the transport never reads.
 */
function webRequestOf(ctx: Context): Request {
  const headers = new Headers();
  for (const name of TRANSPORT_HEADERS) {
    const value = ctx.get(name);
    if (value) headers.set(name, value);
  }
  const request: Pick<Request, 'method' | 'url' | 'headers'> = {
    method: ctx.method,
    url: `http://weft.invalid${ctx.originalUrl}`,
    headers,
  };
  return request as Request;
}

/**
 * The response closing before it was written: the client went away (a `tasks/result` stops waiting). The
 * AbortSignal is made only when asked for, which a plain tool call never does.
 */
function clientGone(ctx: Context) {
  let controller: AbortController | undefined;
  let left = false;
  const leave = () => {
    left = true;
    controller?.abort();
  };
  ctx.res.once('close', leave);
  return {
    signal(): AbortSignal {
      if (!controller) {
        controller = new AbortController();
        if (left) controller.abort();
      }
      return controller.signal;
    },
    dispose: () => ctx.res.off('close', leave),
  };
}

export const MCP_PATH = '/mcp';

/**
 * MCP's Streamable HTTP transport (2025-11-25) asks servers to validate `Origin`, against DNS
 * rebinding: a browser page of another origin must not reach a local server. Present and not
 * allowed is 403; absent is not a browser's request and passes. Allowed: PUBLIC_URL's origin and
 * MCP_ALLOWED_ORIGINS. Ahead of authentication, so a refused page learns nothing of the credential.
 */
export function mcpOrigin(config: Pick<Config, 'PUBLIC_URL' | 'MCP_ALLOWED_ORIGINS'>): Middleware {
  const allowed = new Set(config.MCP_ALLOWED_ORIGINS);
  if (config.PUBLIC_URL) allowed.add(new URL(config.PUBLIC_URL).origin);
  return async (ctx, next) => {
    const origin = ctx.get('origin');
    if (ctx.path !== MCP_PATH || !origin || allowed.has(origin)) return next();
    throw new HttpError(403, `Origin ${origin.slice(0, 200)} may not call the MCP server (MCP_ALLOWED_ORIGINS)`);
  };
}

/**
 * Streamable HTTP says a server without a server-sent stream answers GET with 405, and a stateless
 * one has no session to DELETE; the MCP clients take 405 as "no stream" and carry on.
 */
export function mcpOtherMethods(): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== MCP_PATH || ctx.method === 'POST') return next();
    ctx.set('Allow', 'POST');
    throw new HttpError(405, 'Method not allowed: the MCP server is stateless and answers POST only');
  };
}

/**
 * `POST /mcp`: the MCP server's Streamable HTTP endpoint, stateless (no `Mcp-Session-Id`; GET and
 * DELETE answer 405). Authentication and the rate limit are the API's (`mountRoutes`); each tool
 * call then needs its tool's scope, exactly as `POST /v1/cap/<tool>`.
 */
export const mcpRoutes = (mcp: McpService) => [
  defineRoute({
    method: 'post',
    path: MCP_PATH,
    operationId: 'mcpMessage',
    summary: 'The MCP server (Streamable HTTP, stateless): the capability registry as MCP tools',
    description:
      'A JSON-RPC message of the Model Context Protocol, answered as `application/json` (the client must accept ' +
      '`application/json` and `text/event-stream`). `tools/list` lists the `/v1/cap` tools the credential may ' +
      'call, named with `_` for the dot (`agent.claim_work` → `agent_claim_work`); `tools/call` runs the same ' +
      'handler as `POST /v1/cap/<tool>`, with the same credits, and answers a refusal (402, 403, 404, 409, 422 …) ' +
      'as a tool result with `isError` rather than an HTTP error. A write tool replays its first answer for a ' +
      'repeated `_meta["weft/idempotencyKey"]`. Notifications and responses alone are answered 202 without a ' +
      'body. A message with a member JSON-RPC does not define is 422. A browser page may call it only from ' +
      'PUBLIC_URL’s origin or one of MCP_ALLOWED_ORIGINS (`Origin` otherwise is 403; no `Origin` passes). An ' +
      'OAuth access token (issued for this resource, RFC 8707) works here and nowhere else. Connect an MCP ' +
      'client with an MCP token (`POST /v1/mcp/token`), an API key or OAuth. MCP tasks (2025-11-25): ' +
      '`runs_dispatch`, `ontology_remember` and connector tools called with `task` answer at once with a task ' +
      'whose id is a run’s `execution_id`; `tasks/get`, `tasks/result` (held until the run ends, at most ' +
      `${LIMITS.mcpTasks.resultWaitMs / 60_000} minutes), \`tasks/list\` and \`tasks/cancel\` read and cancel ` +
      'runs of the credential’s workspace (`runs:read`, `runs:write`); another workspace’s task is "not found".',
    tags: ['mcp'],
    body: McpRequestBody,
    // Each message of a JSON-RPC batch counts against the rate limit, as one request would (review L-5).
    calls: (body) => (Array.isArray(body) ? body.length : 1),
    // As POST /v1/cap: every effect of a tool goes through a unit of work or a scoped read, which carry
    // and await the credential's proof, so a call may start from the principal recalled (issue 27).
    recallable: true,
    example: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
    produces: { 'application/json': McpResponseBody },
    errors: {
      403: 'The request’s `Origin` is not one allowed to call the MCP server',
      406: {
        description: 'The client does not accept both `application/json` and `text/event-stream`',
        body: JsonRpcErrorBody,
      },
    },
    handler: async ({ auth, body, ctx }) => {
      const gone = clientGone(ctx);
      const response = await mcp
        .handle(webRequestOf(ctx), body, {
          principal: auth,
          // A batch's calls each get their own, so two `ontology.ask`s cannot collide on one.
          correlationId: Array.isArray(body) ? undefined : ctx.state.correlationId,
          get signal() {
            return gone.signal();
          },
        })
        .finally(gone.dispose);
      for (const [name, value] of response.headers) ctx.set(name, value);
      // A 202 has no body; Koa would otherwise write its status text.
      ctx.body = response.body === '' ? null : response.body;
      ctx.status = response.status;
    },
  }),
];
