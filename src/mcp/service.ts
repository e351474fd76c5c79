import { Server } from '@modelcontextprotocol/sdk/server/index.js';
// The Web-standard transport (Request in, Response out) rather than the Node one: Koa keeps the response.
import * as streamableHttp from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type {
  CallToolRequest,
  CallToolResult,
  CreateTaskResult,
  JSONRPCRequest,
} from '@modelcontextprotocol/sdk/types.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { CallerIdempotencyKey, parseIdempotencyKey } from '../capabilities/idempotency';
import type { CapabilityService } from '../capabilities/service';
import { describeCapability } from '../capabilities/service';
import { wireNames } from '../capabilities/wire-names';
import type { NodeService } from '../graph/node-service';
import { describeError } from '../platform/api/errors';
import type { Principal } from '../platform/auth/principal';
import { isUuid } from '../platform/auth/tokens';
import { PrincipalChanged } from '../platform/db/credential-proof';
import { ValidationFailedError } from '../platform/errors';
import type { Logger } from '../platform/logger';
import { API_VERSION } from '../platform/openapi/document';
import { LIMITS } from '../rules/limits';
import { answerToolCall, plainToolCall } from './direct-calls';
import { startTask, withTaskSupport } from './task-calls';
import type { TaskDeps } from './tasks';
import { protocolError, runTaskStore } from './tasks';
import type { McpTool } from './tools';
import { errorResult, locateInArguments, META, mcpTools, successResult } from './tools';

/** MCP's code for an unknown resource (the specification's `resources/read`, not a JSON-RPC standard code). */
const RESOURCE_NOT_FOUND = -32002;
const NODE_URI = /^weft:\/\/nodes\/([^/?#]+)$/;
const SERVER_INFO = { name: 'weft', title: 'Weft knowledge graph', version: API_VERSION };

const INSTRUCTIONS =
  'Weft is a workspace-scoped knowledge graph for agents. ontology_search and ontology_ask read the graph; ' +
  'agent_* tools coordinate work (sessions, claims on nodes, findings, decisions). Paid tools say their price; ' +
  `a refused call is a result with isError and the HTTP status and detail in _meta["${META.error}"]. ` +
  `Write tools replay their first answer for a repeated _meta["${META.idempotencyKey}"]. ` +
  'A node is readable as the resource weft://nodes/{node_id}. runs_dispatch, ontology_remember and connector ' +
  'tools may be called as tasks: the task is a durable run (its id the execution_id), read with tasks/get.';

export interface McpCall {
  principal: Principal;
  /** The HTTP request's correlation id, used for a single message (a batch lets each call have its own). */
  correlationId?: string;
  /** Aborted when the client goes away: a `tasks/result` waiting for its task stops. */
  signal?: AbortSignal;
}

/** The HTTP answer to one `POST /mcp`: its status, headers and body (empty for a 202). */
export interface McpAnswer {
  status: number;
  headers: [string, string][];
  body: string;
}

const json = (status: number, value: unknown): McpAnswer => ({
  status,
  headers: [['content-type', 'application/json']],
  body: JSON.stringify(value),
});

/**
 * `tasks/result` holds its request until the task finishes: at most LIMITS.mcpTasks.resultWaitMs, then
 * each request of the message is answered with an error saying to ask again (the task goes on). The
 * client leaving ends the wait likewise (its answer goes nowhere).
 */
function holdLimit(body: unknown, signal?: AbortSignal) {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<McpAnswer>((resolve) => {
    const answer = () => {
      const ids = (Array.isArray(body) ? body : [body]).flatMap((message) =>
        message && typeof message === 'object' && 'id' in message && 'method' in message ? [message.id] : [],
      );
      const error = { code: ErrorCode.RequestTimeout, message: 'The task is still working: call tasks/result again' };
      const replies = ids.map((id) => ({ jsonrpc: '2.0', id, error }));
      if (replies.length === 0) resolve({ status: 202, headers: [], body: '' });
      else resolve(json(200, Array.isArray(body) ? replies : replies[0]));
    };
    timer = setTimeout(answer, LIMITS.mcpTasks.resultWaitMs);
    signal?.addEventListener('abort', answer, { once: true });
  });
  return { expired, clear: () => clearTimeout(timer) };
}

/**
 * The MCP server over the capability registry. Stateless: nothing is kept between requests, since every
 * tool call is one request/response and the credential is checked on each request anyway. A plain
 * `tools/call` is answered without an SDK `Server` (direct-calls.ts); any other message gets a fresh
 * `Server` and Streamable HTTP transport bound to the caller.
 */
export function createMcpService(deps: {
  capabilities: Pick<CapabilityService, 'tools' | 'describe' | 'invoke' | 'toolsFor'>;
  nodes: Pick<NodeService, 'get'>;
  logger: Logger;
  /** Tasks are runs (tasks.ts): read, listed and cancelled through the runs service. */
  runs: TaskDeps['runs'];
  waitpoints: TaskDeps['waitpoints'];
  /** Whether a plain call's result is checked against the MCP result schema (`checksAnswers`). */
  checkResults: boolean;
}) {
  const { capabilities, nodes, logger } = deps;
  const taskDeps: TaskDeps = { runs: deps.runs, waitpoints: deps.waitpoints, logger };
  const tools = mcpTools(capabilities.tools, capabilities.describe());
  wireNames(tools.map((tool) => tool.capability)); // throws at start-up when two names would collide
  const byWireName = new Map(tools.map((tool) => [tool.definition.name, tool]));
  const registryCount = capabilities.tools.length;

  /** The workspace's own tools (its connectors'), after the registry's: looked up on each request. */
  async function workspaceTools(workspaceId: string): Promise<McpTool[]> {
    const own = (await capabilities.toolsFor(workspaceId)).slice(registryCount);
    return own.length === 0 ? [] : mcpTools(own, own.map(describeCapability));
  }
  // The SDK's Server makes an Ajv instance of its own unless given one (≈ 1 ms a request, the most
  // expensive part of a fresh server); it validates only elicitation answers, which Weft never asks.
  const jsonSchemaValidator = new AjvJsonSchemaValidator();

  /** The status and detail `/v1/cap` would answer; an unexpected error is logged and told as a bare 500. */
  function refusal(error: unknown, tool: string): CallToolResult {
    const described =
      error instanceof ValidationFailedError
        ? describeError(new ValidationFailedError(locateInArguments(error.issues)))
        : describeError(error);
    if (!described || described.status >= 500) logger.error({ err: error, tool }, 'mcp tool call failed');
    return errorResult(described?.status ?? 500, described?.detail ?? 'Internal server error');
  }

  function idempotencyKeyOf(meta: Record<string, unknown> | undefined): string | undefined {
    const value = meta?.[META.idempotencyKey];
    if (value === undefined) return undefined;
    return parseIdempotencyKey(CallerIdempotencyKey, value, ['_meta', META.idempotencyKey]);
  }

  /** A `tools/call`, for `call`; `changed`: where a call that met PrincipalChanged leaves it, for `handle`. */
  async function callTool(
    call: McpCall,
    changed: (error: PrincipalChanged) => void,
    request: CallToolRequest,
  ): Promise<CallToolResult | CreateTaskResult> {
    const { principal } = call;
    const { name, arguments: input, _meta, task } = request.params;
    const registered = byWireName.get(name);
    const tool =
      registered ?? (await workspaceTools(principal.workspaceId)).find((own) => own.definition.name === name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${name}`);
    try {
      const idempotencyKey = idempotencyKeyOf(_meta);
      if (task) {
        const own = registered === undefined;
        const started = {
          principal,
          tool,
          own,
          input: input ?? {},
          idempotencyKey,
          correlationId: call.correlationId,
        };
        return await startTask({ ...taskDeps, capabilities }, started);
      }
      const outcome = await capabilities.invoke(principal, tool.capability, input ?? {}, {
        idempotencyKey,
        correlationId: call.correlationId,
      });
      return successResult(outcome);
    } catch (error) {
      // A recalled credential is now another principal: nothing was written, and the router serves
      // the request again as what it is; the SDK would make the error a result, so it is carried out.
      if (error instanceof PrincipalChanged) {
        changed(error);
        return errorResult(500, 'Internal server error');
      }
      // A task's refusal is a protocol error: its answer must be a task or an error, never a result.
      if (task) throw protocolError(error, logger, 'task start');
      return refusal(error, tool.capability);
    }
  }

  const serverOptions = {
    capabilities: {
      tools: { listChanged: false },
      resources: {},
      tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    },
    instructions: INSTRUCTIONS,
    jsonSchemaValidator,
  };

  /** `changed`: where a tool call that met PrincipalChanged leaves it, for `handle` to rethrow. */
  function serverFor(call: McpCall, changed: (error: PrincipalChanged) => void): Server {
    const { principal } = call;
    const server = new Server(SERVER_INFO, {
      ...serverOptions,
      // tasks/get, tasks/result, tasks/list and tasks/cancel: the SDK's handlers over Weft's runs.
      taskStore: runTaskStore(principal, taskDeps),
    });

    // Only the tools this credential may call: a read-only key is not offered tools it would be refused.
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [...tools, ...(await workspaceTools(principal.workspaceId))]
        .filter((tool) => tool.scopes.every((scope) => principal.scopes.has(scope)))
        .map((tool) => withTaskSupport(tool, !byWireName.has(tool.definition.name), principal)),
    }));

    server.setRequestHandler(CallToolRequestSchema, (request) => callTool(call, changed, request));

    server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: [] }));
    server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
      resourceTemplates: [
        {
          uriTemplate: 'weft://nodes/{node_id}',
          name: 'node',
          title: 'A node of the workspace graph',
          description: 'A live node as GET /v1/ontology/nodes/{node_id} answers it (needs ontology:read).',
          mimeType: 'application/json',
        },
      ],
    }));
    server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
      const { uri } = request.params;
      const nodeId = NODE_URI.exec(uri)?.[1];
      if (!nodeId || !isUuid(nodeId)) throw new McpError(RESOURCE_NOT_FOUND, 'Resource not found', { uri });
      if (!principal.scopes.has('ontology:read')) {
        throw new McpError(ErrorCode.InvalidRequest, 'Missing scope ontology:read', { uri });
      }
      try {
        const node = await nodes.get(principal, nodeId.toLowerCase());
        return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(node) }] };
      } catch (error) {
        const described = describeError(error);
        // Another workspace's node is not found either (RLS): ids reveal nothing.
        if (described?.status === 404) throw new McpError(RESOURCE_NOT_FOUND, 'Resource not found', { uri });
        // The SDK would send an error's own message: never the inner text of an unexpected one.
        if (!described || described.status >= 500) logger.error({ err: error, uri }, 'mcp resource read failed');
        const status = described?.status ?? 500;
        const detail = described?.detail ?? 'Internal server error';
        const code = status >= 500 ? ErrorCode.InternalError : ErrorCode.InvalidRequest;
        throw new McpError(code, typeof detail === 'string' ? detail : `Refused (${status})`, { uri, status, detail });
      }
    });
    return server;
  }

  /** A plain `tools/call` (direct-calls.ts), held as long as any message may be (`holdLimit`). */
  async function answerDirectly(request: JSONRPCRequest, body: unknown, call: McpCall): Promise<McpAnswer> {
    let principalChanged: PrincipalChanged | undefined;
    const changed = (error: PrincipalChanged) => {
      principalChanged = error;
    };
    // Not the client's leaving: a plain call's answer then simply goes nowhere, and its AbortSignal is not made.
    const held = holdLimit(body);
    try {
      const answered = answerToolCall(request, (params) => callTool(call, changed, params) as Promise<CallToolResult>, {
        checkResult: deps.checkResults,
        failed: (error) => logger.error({ err: error }, 'mcp tool call failed'),
      });
      const outcome = await Promise.race([answered, held.expired]);
      if (typeof outcome !== 'string') return outcome;
      if (principalChanged) throw principalChanged;
      return { status: 200, headers: [['content-type', 'application/json']], body: outcome };
    } finally {
      held.clear();
    }
  }

  return {
    /**
     * Answers one HTTP request of the Streamable HTTP transport (the SDK checks the headers and
     * the JSON-RPC shape, and negotiates the protocol version) as JSON, never as an SSE stream:
     * no tool reports progress, so a plain response is simpler for every client. A plain `tools/call`
     * is answered directly (direct-calls.ts), anything else by a fresh server.
     */
    async handle(request: Request, body: unknown, call: McpCall): Promise<McpAnswer> {
      const plain = plainToolCall(request, body);
      if (plain) return answerDirectly(plain, body, call);
      let principalChanged: PrincipalChanged | undefined;
      const server = serverFor(call, (error) => {
        principalChanged = error;
      });
      const transport = new streamableHttp.WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      const held = holdLimit(body, call.signal);
      let answered = false;
      try {
        await server.connect(transport);
        const response = await Promise.race([
          transport.handleRequest(request, { parsedBody: body }).then(async (answer) => {
            answered = true;
            return { status: answer.status, headers: [...answer.headers], body: await answer.text() };
          }),
          held.expired,
        ]);
        if (principalChanged) throw principalChanged;
        return response;
      } finally {
        held.clear();
        // The JSON answer is complete once handleRequest resolves: every request of the message was
        // answered and nothing is left to the server, which is dropped as it is. Otherwise (the wait ran
        // out, the client left, a failure) it is closed, which aborts a `tasks/result` still waiting.
        if (!answered) await server.close();
      }
    },
  };
}

export type McpService = ReturnType<typeof createMcpService>;
