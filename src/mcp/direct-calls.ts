import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, JSONRPCRequest, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';

/**
 * The one message `POST /mcp` answers on a shorter way: a single `tools/call` request without a task, sent
 * as the SDK's Streamable HTTP transport would take it (Accept, Content-Type, a supported MCP-Protocol-Version),
 * read with the SDK's own JSON-RPC schema. Anything else (a batch, a notification, a task, another method, a
 * header that transport refuses) goes through that transport, which answers it and its errors.
 */
export function plainToolCall(request: Request, body: unknown): JSONRPCRequest | undefined {
  if (Array.isArray(body)) return undefined;
  const accept = request.headers.get('accept');
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) return undefined;
  if (!isJsonContentType(request.headers.get('content-type'))) return undefined;
  const version = request.headers.get('mcp-protocol-version');
  if (version !== null && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return undefined;
  const parsed = JSONRPCMessageSchema.safeParse(body);
  if (!parsed.success || !('method' in parsed.data) || !('id' in parsed.data)) return undefined;
  const message = parsed.data as JSONRPCRequest;
  const params = message.params as { task?: unknown } | undefined;
  return message.method === 'tools/call' && params?.task === undefined ? message : undefined;
}

/**
 * One SDK `Server` for every plain `tools/call` of the process, over an in-process transport (the SDK's
 * `Transport` interface): a fresh server and Streamable HTTP transport per request, with a Web `Response`
 * read back as a stream, cost about three times the call's own MCP work (docs/benchmarks.md, round 3).
 * Each call gets an id of the server's own, so concurrent clients' ids never meet in it; the answer
 * carries the client's id again. The server's handlers find their call by that id (`extra.requestId`).
 */
export function directCalls(server: Server) {
  const waiting = new Map<RequestId, (answer: JSONRPCMessage) => void>();
  let lastId = 0;
  const transport: Transport = {
    start: async () => {},
    close: async () => {},
    // The server only answers: a plain tool call sends no notification or request of its own.
    send: async (message) => {
      if (!('id' in message) || message.id === undefined) return;
      const answer = waiting.get(message.id);
      waiting.delete(message.id);
      answer?.(message);
    },
  };
  const connected = server.connect(transport);

  return {
    /**
     * Hands `request` to the server under an id of its own (`started` learns it before any handler runs)
     * and answers its JSON-RPC answer with the client's id. `cancel` drops a call whose client no longer
     * waits: the server aborts its handler's signal, and its answer goes nowhere.
     */
    async call(request: JSONRPCRequest, started: (id: number) => void) {
      await connected;
      const id = ++lastId;
      started(id);
      const answered = new Promise<JSONRPCMessage>((resolve) => waiting.set(id, resolve));
      transport.onmessage?.({ ...request, id });
      return {
        answer: answered.then((answer) => ({ ...answer, id: request.id }) as JSONRPCMessage),
        cancel() {
          waiting.delete(id);
          transport.onmessage?.({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } });
        },
      };
    },
  };
}
