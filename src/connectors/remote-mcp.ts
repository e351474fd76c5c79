import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { API_VERSION } from '../platform/openapi/document';
import type { CallFetch } from './outbound';
import { ConnectorCallError } from './outbound';
import type { RemoteTool } from './tool-names';

/** The `_meta` key a call's idempotency key travels in (the key Weft's own MCP server reads). */
export const IDEMPOTENCY_META = 'weft/idempotencyKey';

/** Connects the SDK's client over Streamable HTTP through the call's guarded fetch, runs `work`, closes. */
async function withClient<T>(
  url: string,
  headers: Record<string, string>,
  call: CallFetch,
  work: (client: Client) => Promise<T>,
): Promise<T> {
  const client = new Client({ name: 'weft-connector', version: API_VERSION });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: call.fetch,
    requestInit: { headers, redirect: 'error' },
  });
  try {
    await client.connect(transport);
    return await work(client);
  } catch (error) {
    throw asCallError(error);
  } finally {
    await client.close().catch(() => {});
  }
}

function asCallError(error: unknown): Error {
  if (error instanceof ConnectorCallError) return error;
  // The SDK wraps what the fetch threw; the reason stays in its cause chain.
  let cause: unknown = error;
  for (let depth = 0; depth < 5 && cause instanceof Error; depth += 1) {
    if (cause instanceof ConnectorCallError) return cause;
    cause = cause.cause;
  }
  if (error instanceof McpError) return new ConnectorCallError('remote_error', error.message);
  const status = /HTTP (\d{3})/.exec(error instanceof Error ? error.message : '')?.[1];
  return new ConnectorCallError(
    status ? 'remote_error' : 'unreachable',
    status ? `The server answered ${status}` : 'The server did not answer as an MCP server',
    status ? Number(status) : undefined,
  );
}

/** `tools/list`, every page, at most `max` tools. */
export function listMcpTools(
  url: string,
  headers: Record<string, string>,
  call: CallFetch,
  max: number,
): Promise<RemoteTool[]> {
  return withClient(url, headers, call, async (client) => {
    const tools: RemoteTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      for (const tool of page.tools) {
        tools.push({
          remoteName: tool.name,
          description: (tool.description ?? tool.title ?? tool.name).slice(0, 1024),
          inputSchema: (tool.inputSchema ?? { type: 'object' }) as Record<string, unknown>,
          readOnly: tool.annotations?.readOnlyHint === true,
        });
      }
      if (tools.length > max) throw new ConnectorCallError('remote_error', `The server lists more than ${max} tools`);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  });
}

/**
 * `tools/call` with the idempotency key in `_meta`. The answer is the tool's structured content
 * when it has one, else `{content}`; an `isError` result is a failed call `remote_error`.
 */
export function callMcpTool(
  url: string,
  headers: Record<string, string>,
  call: CallFetch,
  tool: { remoteName: string; input: Record<string, unknown>; idempotencyKey: string; timeoutMs: number },
): Promise<Record<string, unknown>> {
  return withClient(url, headers, call, async (client) => {
    const result = await client.callTool(
      { name: tool.remoteName, arguments: tool.input, _meta: { [IDEMPOTENCY_META]: tool.idempotencyKey } },
      undefined,
      { timeout: tool.timeoutMs },
    );
    const content = Array.isArray(result.content) ? result.content : [];
    if (result.isError) {
      const text = content
        .map((part) => (part && typeof part === 'object' && 'text' in part ? String(part.text) : ''))
        .join(' ');
      throw new ConnectorCallError('remote_error', text || 'The tool answered an error');
    }
    const structured = result.structuredContent as Record<string, unknown> | undefined;
    return structured && typeof structured === 'object' ? structured : { content };
  });
}
