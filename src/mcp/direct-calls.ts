import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import type { CallToolRequest, CallToolResult, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  ErrorCode,
  McpError,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * The one message `POST /mcp` answers on a shorter way: a single `tools/call` request without a task, sent
 * as the SDK's Streamable HTTP transport would take it (Accept, Content-Type, a supported MCP-Protocol-Version).
 * The route has checked the JSON-RPC envelope (McpRequestBody); `answerToolCall` reads the rest with the
 * SDK's own schema. Anything else (a batch, a notification, a task, another method, a header that transport
 * refuses) goes through that transport, which answers it and its errors.
 */
export function plainToolCall(request: Request, body: unknown): JSONRPCRequest | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const message = body as Partial<JSONRPCRequest> & { result?: unknown; error?: unknown };
  if (message.method !== 'tools/call' || message.id === undefined) return undefined;
  if (message.result !== undefined || message.error !== undefined) return undefined;
  if ((message.params as { task?: unknown } | undefined)?.task !== undefined) return undefined;
  const accept = request.headers.get('accept');
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) return undefined;
  if (!isJsonContentType(request.headers.get('content-type'))) return undefined;
  const version = request.headers.get('mcp-protocol-version');
  if (version !== null && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return undefined;
  return message as JSONRPCRequest;
}

/** The JSON text of results `toolResult` made, by result: the answer embeds it instead of serialising it again. */
const serialised = new WeakMap<CallToolResult, string>();

/**
 * A tool result whose structured content is `structured`, with its JSON text as the text block (MCP: a tool
 * returning structured content should return it serialised too). The text is kept, so that `answerToolCall`
 * writes it once more as a string and never serialises the structured content a second time.
 */
export function toolResult(structured: Record<string, unknown>, meta: Record<string, unknown>): CallToolResult {
  const text = JSON.stringify(structured);
  const result: CallToolResult = { content: [{ type: 'text', text }], structuredContent: structured, _meta: meta };
  serialised.set(result, text);
  return result;
}

function resultJson(result: CallToolResult): string {
  const text = serialised.get(result);
  if (text === undefined || result.content.length !== 1 || Object.keys(result).length !== 3) {
    return JSON.stringify(result);
  }
  const block = `[{"type":"text","text":${JSON.stringify(text)}}]`;
  return `{"content":${block},"structuredContent":${text},"_meta":${JSON.stringify(result._meta)}}`;
}

/**
 * A plain `tools/call` answered without the SDK's `Server`: its protocol layer (a JSON-RPC schema check of the
 * message three times over, an AbortController, a promise chain and a check of the result) cost a plain call
 * about a fifth of its time on the server (docs/benchmarks.md), for nothing such a call uses. What a client
 * sees is the same: the params read with the SDK's own schema (a bad one is -32602), an `McpError` as its
 * JSON-RPC error, any other failure as -32603 (told to `failed`, not to the client), and, where answers are
 * checked (`checksAnswers`: the test suite), the result checked with the SDK's result schema. Answers the
 * JSON-RPC body.
 */
export async function answerToolCall(
  message: JSONRPCRequest,
  call: (request: CallToolRequest) => Promise<CallToolResult>,
  options: { checkResult: boolean; failed: (error: unknown) => void },
): Promise<string> {
  const id = JSON.stringify(message.id);
  const error = (code: number, text: string, data?: unknown) =>
    `{"jsonrpc":"2.0","id":${id},"error":${JSON.stringify({ code, message: text, data })}}`;
  const request = CallToolRequestSchema.safeParse(message);
  if (!request.success) return error(ErrorCode.InvalidParams, `Invalid tools/call request: ${request.error.message}`);
  try {
    const result = await call(request.data);
    if (options.checkResult && !CallToolResultSchema.safeParse(result).success) {
      throw new Error('a tools/call result does not match the MCP result schema');
    }
    return `{"jsonrpc":"2.0","id":${id},"result":${resultJson(result)}}`;
  } catch (failure) {
    if (failure instanceof McpError) return error(failure.code, failure.message, failure.data);
    options.failed(failure);
    return error(ErrorCode.InternalError, 'Internal server error');
  }
}
