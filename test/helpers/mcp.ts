import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/**
 * The MCP SDK's own client, connected to `baseUrl`'s `/mcp` with a bearer credential, its tool list
 * read: the client learns from it which tools take tasks (callToolStream then sends `task` itself).
 */
export async function mcpClient(baseUrl: string, token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'weft-test', version: '1.0.0' });
  await client.connect(transport);
  await client.listTools();
  return client;
}
