/**
 * `npm run bench -- mcp [--seconds 3] [--nodes 1000]`
 *
 * The MCP server against the capability routes, each figure interleaved with its anchor in the
 * same run: the same read tool called through `/mcp` (the SDK's own Client over Streamable HTTP,
 * connected once; one HTTP POST per call) and through `POST /v1/cap/<tool>` (plain fetch):
 * - `billing.credits_balance`: free and tiny, so the difference is the MCP layer's fixed cost
 *   (JSON-RPC parsing, a fresh stateless server and transport per request, the SDK's client-side
 *   output-schema validation);
 * - `ontology.search` (k10 over `--nodes` embedded nodes): a paid tool doing real work.
 * Also `billing.credits_balance` as a hand-written JSON-RPC POST (the server's share without the SDK
 * client's parsing and validation), and the client's connect (initialize, the initialized
 * notification, the GET that answers 405) against one bare authenticated GET. The client and the
 * server share one process. Data goes into weft_bench through the owner connection.
 */

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createApp } from '../src/app/http';
import { localEmbedding } from '../src/platform/llm/embedding/local';
import type { Measurement } from './lib/measure';
import { markdownTable, measure, numberOption, pairedOverhead } from './lib/measure';
import { bootBenchService, serveLocally } from './lib/servers';

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'omega', 'parser', 'graph', 'search', 'agent', 'claim'];

export async function run(args: string[]): Promise<void> {
  const seconds = numberOption(args, 'seconds', 3);
  const nodeCount = numberOption(args, 'nodes', 1000);
  const service = await bootBenchService();
  const { runtime, owner, provisioning } = service;
  const tenant = await provisioning.bootstrap({
    name: 'weft-bench-mcp',
    credits: 100_000_000,
  });
  const names = Array.from(
    { length: nodeCount },
    (_, i) => `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} item ${i}`,
  );
  await owner.query(
    `INSERT INTO nodes (workspace_id, type, name, importance_score, embedding)
     SELECT $1, 'concept', n.name, 0.5, n.embedding::vector
     FROM unnest($2::text[], $3::text[]) AS n(name, embedding)`,
    [tenant.workspace_id, names, names.map((name) => `[${localEmbedding(name).join(',')}]`)],
  );
  await owner.query(`ANALYZE nodes`);

  const { server, url } = await serveLocally(createApp(runtime));
  const headers = { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' };
  const http = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${path} → ${response.status} ${text.slice(0, 200)}`);
    return JSON.parse(text);
  };
  const connect = async () => {
    const client = new Client({ name: 'weft-bench', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${tenant.api_key}` } },
      }),
    );
    return client;
  };
  const client = await connect();
  await client.listTools(); // the client validates structured content against the listed output schemas
  const tool = async (name: string, input: Record<string, unknown>) => {
    const result = await client.callTool({ name, arguments: input });
    if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.content)}`);
    return result;
  };
  const pick = <T>(list: readonly T[], i: number) => list[i % list.length]!;
  const queries = WORDS.map((word, i) => `${word} ${WORDS[(i + 3) % WORDS.length]}`);

  // The server's share alone: the same call as one hand-written JSON-RPC POST, without the SDK's client.
  const rawCall = async (name: string, input: Record<string, unknown>) => {
    const response = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { ...headers, accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: input } }),
    });
    const answer = (await response.json()) as { result?: { isError?: boolean } };
    if (response.status !== 200 || !answer.result || answer.result.isError) throw new Error(JSON.stringify(answer));
    return answer;
  };

  const ops = [
    {
      name: 'billing_credits_balance via /mcp',
      subject: () => tool('billing_credits_balance', {}),
      anchorName: 'POST /v1/cap/billing.credits_balance',
      anchor: () => http('POST', '/v1/cap/billing.credits_balance', {}),
    },
    {
      name: 'ontology_search via /mcp (k10)',
      subject: (i: number) => tool('ontology_search', { query: pick(queries, i), top_k: 10 }),
      anchorName: 'POST /v1/cap/ontology.search (k10)',
      anchor: (i: number) => http('POST', '/v1/cap/ontology.search', { query: pick(queries, i), top_k: 10 }),
    },
    {
      name: 'billing_credits_balance, raw JSON-RPC POST /mcp',
      subject: () => rawCall('billing_credits_balance', {}),
      anchorName: 'POST /v1/cap/billing.credits_balance',
      anchor: () => http('POST', '/v1/cap/billing.credits_balance', {}),
    },
    {
      name: 'MCP client connect (initialize)',
      subject: async () => (await connect()).close(),
      anchorName: 'bare authenticated GET',
      anchor: () => http('GET', '/v1/auth/me/api-keys/scopes'),
    },
  ];

  const paired = [];
  for (const op of ops) paired.push({ op, ...(await pairedOverhead(op.subject, op.anchor, seconds * 2000)) });
  const rows: { subject: Measurement; anchor: Measurement }[] = [];
  for (const op of ops.slice(0, 2)) {
    for (const concurrency of [1, 4]) {
      const subject = await measure(op.name, op.subject, { concurrency, durationMs: seconds * 1000 });
      const anchor = await measure(op.anchorName, op.anchor, { concurrency, durationMs: seconds * 1000 });
      rows.push({ subject, anchor });
      console.error(
        `[bench] ${op.name} c=${concurrency}: p50 ${subject.p50.toFixed(2)} ms | anchor ${anchor.p50.toFixed(2)} ms`,
      );
    }
  }

  console.log(`\nData: ${nodeCount} embedded nodes; ${seconds} s per point.\n`);
  console.log(markdownTable(rows));
  console.log('\n| pair (1 client, alternating) | pairs | p50 ms | anchor p50 ms | median difference ms | p50 ratio |');
  console.log('|---|---|---|---|---|---|');
  for (const { op, subjectP50, anchorP50, medianDifference, pairs } of paired) {
    console.log(
      `| ${op.name} vs ${op.anchorName} | ${pairs} | ${subjectP50.toFixed(2)} | ${anchorP50.toFixed(2)} | ` +
        `${medianDifference.toFixed(2)} | ×${(subjectP50 / anchorP50).toFixed(2)} |`,
    );
  }

  await client.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await service.stop();
}
