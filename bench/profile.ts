/**
 * `npm run bench -- profile [--op node|list|me|replay|cap-node|mcp-node|rpc-node] [--seconds 5] [--clients 4]
 *   [--external] [--out file.cpuprofile]`
 * `npm run bench -- profile --summarise <file.cpuprofile>`
 *
 * A CPU profile of the API under one request kind, taken with the inspector over the measured
 * window only (boot, fixtures and warm-up are left out): 4 clients in this process send
 * `GET /v1/ontology/nodes/{id}` (node), `GET /v1/ontology/nodes?type=…&limit=50` (list),
 * `GET /v1/auth/me/api-keys/scopes` (me: authentication and nothing else), an idempotent replay of
 * `agent.start_session` (replay), or `ontology.get_node` through `POST /v1/cap` (cap-node) or as an MCP
 * `tools/call` of the SDK's client (mcp-node, so the client's own share is in the profile too) or as a
 * plain JSON-RPC POST to `/mcp` (rpc-node: the server's MCP path alone, as bench/tools.ts sends it). Prints
 * where the self time went, by package and by function, and writes the profile for a flame-graph
 * viewer (Chrome DevTools, speedscope). The client's fetch runs in the same process, so undici's share
 * is the client's; with `--external` (node, cap-node, rpc-node) autocannon sends them from a process of its own
 * (bench/lib/external-load.ts), so the profile is the server's alone. `--summarise` prints the same tables for any
 * `.cpuprofile` (`node --cpu-prof` of the runs bench's worker, say).
 */

import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createApp } from '../src/app/http';
import { externalLoad } from './lib/external-load';
import { measure, numberOption, stringOption } from './lib/measure';
import type { CpuProfile } from './lib/profile-summary';
import { profileTables, summariseProfile } from './lib/profile-summary';
import { bootBenchService, serveLocally } from './lib/servers';

const OPS = ['node', 'list', 'me', 'replay', 'cap-node', 'mcp-node', 'rpc-node'] as const;

export async function run(args: string[]): Promise<void> {
  const summarise = stringOption(args, 'summarise');
  if (summarise) {
    console.log(profileTables(summariseProfile(JSON.parse(readFileSync(summarise, 'utf8')) as CpuProfile)));
    return;
  }
  const op = (stringOption(args, 'op') ?? 'node') as (typeof OPS)[number];
  if (!OPS.includes(op)) throw new Error(`--op is one of ${OPS.join(', ')}`);
  const seconds = numberOption(args, 'seconds', 5);
  const clients = numberOption(args, 'clients', 4);
  const out = stringOption(args, 'out') ?? `/tmp/weft-${op}.cpuprofile`;

  const service = await bootBenchService();
  const { runtime, owner, provisioning } = service;
  const tenant = await provisioning.bootstrap({ name: 'weft-bench-profile' });
  const nodes: { id: string }[] = await owner.query(
    `INSERT INTO nodes (workspace_id, type, name)
     SELECT $1, (ARRAY['person', 'project', 'document', 'concept'])[1 + g % 4], 'profiled ' || g
     FROM generate_series(0, 999) g RETURNING id`,
    [tenant.workspace_id],
  );
  // As bench/tools.ts: node i links to i+1, i+7 and i+31 (mod n), so ontology.get_node answers six edges.
  await owner.query(
    `INSERT INTO edges (workspace_id, type, source_node_id, target_node_id)
     SELECT $1, 'RELATES_TO', ids[1 + i], ids[1 + (i + step) % cardinality(ids)]
     FROM (SELECT $2::uuid[] AS ids) a, generate_series(0, cardinality($2::uuid[]) - 1) i,
       unnest(ARRAY[1, 7, 31]) step`,
    [tenant.workspace_id, nodes.map((node) => node.id)],
  );
  await owner.query(`ANALYZE nodes; ANALYZE edges`);
  const api = await serveLocally(createApp(runtime));
  const headers = { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' };
  const send = async (method: string, path: string, body?: unknown, extra: Record<string, string> = {}) => {
    const response = await fetch(`${api.url}${path}`, {
      method,
      headers: { ...headers, ...extra },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${path} → ${response.status} ${text.slice(0, 200)}`);
    return text;
  };
  const replayKey = `profile-replay-${Date.now()}`;
  const replay = () =>
    send('POST', '/v1/cap/agent.start_session', { name: 'replayed' }, { 'Idempotency-Key': replayKey });
  await replay();
  const types = ['person', 'project', 'document', 'concept'];
  const mcp = new Client({ name: 'weft-profile', version: '1.0.0' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${tenant.api_key}` } },
    }),
  );
  await mcp.listTools();
  const operation = {
    node: (i: number) => send('GET', `/v1/ontology/nodes/${nodes[i % nodes.length]!.id}`),
    list: (i: number) => send('GET', `/v1/ontology/nodes?type=${types[i % types.length]}&limit=50`),
    me: () => send('GET', '/v1/auth/me/api-keys/scopes'),
    replay,
    'cap-node': (i: number) => send('POST', '/v1/cap/ontology.get_node', { node_id: nodes[i % nodes.length]!.id }),
    'mcp-node': async (i: number) => {
      const result = await mcp.callTool({
        name: 'ontology_get_node',
        arguments: { node_id: nodes[i % nodes.length]!.id },
      });
      if (result.isError) throw new Error(JSON.stringify(result.content));
    },
    'rpc-node': (i: number) =>
      send(
        'POST',
        '/mcp',
        {
          jsonrpc: '2.0',
          id: i,
          method: 'tools/call',
          params: { name: 'ontology_get_node', arguments: { node_id: nodes[i % nodes.length]!.id } },
        },
        { accept: 'application/json, text/event-stream' },
      ),
  }[op];

  const external = args.includes('--external') ? await externalLoad() : undefined;
  const externalRun = () => {
    const node = (i: number) => nodes[i % nodes.length]!.id;
    const ring = Array.from({ length: 256 }, (_, i) => i);
    const post = (path: string, body: (i: number) => unknown) =>
      ring.map((i) => ({ method: 'POST' as const, path, body: JSON.stringify(body(i)) }));
    const requests = {
      node: ring.map((i) => ({ method: 'GET' as const, path: `/v1/ontology/nodes/${node(i)}` })),
      'cap-node': post('/v1/cap/ontology.get_node', (i) => ({ node_id: node(i) })),
      'rpc-node': post('/mcp', (i) => ({
        jsonrpc: '2.0',
        id: i,
        method: 'tools/call',
        params: { name: 'ontology_get_node', arguments: { node_id: node(i) } },
      })),
    }[op as string];
    if (!requests) throw new Error('--external takes --op node, cap-node or rpc-node');
    return {
      url: api.url,
      headers: { ...headers, accept: 'application/json, text/event-stream' },
      requests,
      connections: clients,
    };
  };
  const load = async (durationMs: number) => {
    if (!external) return measure(op, operation, { concurrency: clients, durationMs, warmupMs: 0 });
    const result = await external.load({ ...externalRun(), seconds: durationMs / 1000 });
    return { count: result.count, rps: result.rps, p50: result.p50 };
  };
  // Warm the JIT and the pools before the profiler starts.
  await load(1000);
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  const figures = await load(seconds * 1000);
  const { profile } = await session.post('Profiler.stop');
  session.disconnect();
  writeFileSync(out, JSON.stringify(profile));

  const summary = summariseProfile(profile as unknown as CpuProfile);
  console.log(
    `${op}: ${clients} clients, ${figures.count} requests in ${seconds} s (${figures.rps.toFixed(0)} req/s, ` +
      `p50 ${figures.p50.toFixed(2)} ms); profile ${out}; ` +
      `${((summary.busyMs * 1000) / figures.count).toFixed(0)} µs of this process's busy samples per request\n`,
  );
  console.log(profileTables(summary));

  await external?.stop();
  await mcp.close();
  await new Promise<void>((resolve) => api.server.close(() => resolve()));
  await service.stop();
}
