import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Task } from '@modelcontextprotocol/sdk/types.js';

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

/** Starts `runs_dispatch` as a task and answers the task the server created, leaving the stream. */
export async function startRunTask(client: Client, args: Record<string, unknown>): Promise<Task> {
  for await (const message of client.experimental.tasks.callToolStream({ name: 'runs_dispatch', arguments: args })) {
    if (message.type === 'taskCreated') return message.task;
    throw new Error(`expected a task, got ${JSON.stringify(message)}`);
  }
  throw new Error('the stream ended without a task');
}
