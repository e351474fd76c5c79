/**
 * `npm run bench -- tools [--seconds 3] [--nodes 1000] [--skip-runs]`
 *
 * The agent tools of issue 40, each figure beside its anchor measured in the same run:
 * - `ontology.get_node` as an MCP `tools/call` against `GET /v1/ontology/nodes/{id}`, at 1 and 4 clients
 *   (goal ≥ 0.8× its throughput), both sent by the same client. The goal's figure comes from autocannon in a
 *   process of its own (bench/lib/external-load.ts), as a service's throughput is measured: this process is
 *   then the server alone, and an MCP answer whose result is an `isError` tool result counts as a failure.
 *   Then, for comparison with earlier rounds, from clients in this process: a plain `fetch` (whose POST body,
 *   a Web stream, costs this thread several hundred µs more than a GET) and a lean node:http client
 *   (bench/lib/http-client.ts). The SDK's own `Client` (its zod parse of each result and Ajv check of
 *   `structuredContent`) is a pair below. The tool answers more than the route (the node's edges each way
 *   with the node at the other end, and MCP sends the result as text and as structured content), so the
 *   ratio holds the tool's larger answer as well as the MCP layer.
 *   Each point warms both sides at its concurrency, then measures them in alternating phases (MCP, route,
 *   route, MCP), so that neither pays the JIT's warm-up alone nor meets the machine's load at another time,
 *   and each side's CPU per request (this process, the database's backends): on a shared machine, req/s
 *   moves with other processes' load, CPU per request much less.
 * - Where the difference goes, one client alternating request by request: the SDK's `Client` (over
 *   Streamable HTTP, connected once) against the route, the same tool through
 *   `POST /v1/cap/ontology.get_node` (the capability layer without MCP) against the route, and the
 *   plain JSON-RPC POST against `/v1/cap`.
 * - A run whose steps are `runs.dispatch` of a 1-step child and `runs.wait` on it (its id taken by
 *   `$from`) against two sequential 1-step runs, each dispatched over HTTP and awaited to its end
 *   (goal ≤ 1.3× their p50), alternating run by run; the worker runs in a process of its own
 *   (`--skip-runs` leaves this measure out).
 * Every node has three outgoing and three incoming edges. Data goes into weft_bench through the owner
 * connection. `npm run bench -- profile --op rpc-node --external` profiles the server's MCP path alone.
 */

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createApp } from '../src/app/http';
import { ensureSearchAttributes } from '../src/platform/temporal/connection';
import { postgresBackends } from './lib/cpu';
import { externalLoad } from './lib/external-load';
import { jsonClient } from './lib/http-client';
import type { Measurement } from './lib/measure';
import { markdownTable, measureAlternating, numberOption, pairedOverhead } from './lib/measure';
import { forkWorker, runResult } from './lib/run-worker';
import { bootBenchService, serveLocally } from './lib/servers';

/** The goal for the MCP read: at least this share of the REST route's throughput. */
const GET_NODE_GOAL = 0.8;
/** The goal for a parent that starts a child and waits for it: at most this times two runs' p50. */
const RUNS_GOAL = 1.3;

export async function run(args: string[]): Promise<void> {
  const seconds = numberOption(args, 'seconds', 3);
  const nodeCount = numberOption(args, 'nodes', 1000);
  const service = await bootBenchService();
  const { runtime, owner, provisioning } = service;
  const tenant = await provisioning.bootstrap({ name: 'weft-bench-tools' });
  const nodes: { id: string }[] = await owner.query(
    `INSERT INTO nodes (workspace_id, type, name)
     SELECT $1, (ARRAY['person', 'project', 'document', 'concept'])[1 + g % 4], 'tool node ' || g
     FROM generate_series(0, $2 - 1) g RETURNING id`,
    [tenant.workspace_id, nodeCount],
  );
  const ids = nodes.map((node) => node.id);
  // Node i links to i+1, i+7 and i+31 (mod n): three edges out and three in for each.
  await owner.query(
    `INSERT INTO edges (workspace_id, type, source_node_id, target_node_id)
     SELECT $1, 'RELATES_TO', ids[1 + i], ids[1 + (i + step) % cardinality(ids)]
     FROM (SELECT $2::uuid[] AS ids) a, generate_series(0, cardinality($2::uuid[]) - 1) i,
       unnest(ARRAY[1, 7, 31]) step`,
    [tenant.workspace_id, ids],
  );
  await owner.query(`ANALYZE nodes; ANALYZE edges`);

  const { server, url } = await serveLocally(createApp(runtime));
  const headers = { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' };
  const http = async (method: string, path: string, body?: unknown, expected = 200) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status !== expected) throw new Error(`${path} → ${response.status} ${text.slice(0, 200)}`);
    return JSON.parse(text);
  };
  const client = new Client({ name: 'weft-bench', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${tenant.api_key}` } },
    }),
  );
  await client.listTools(); // the client validates structured content against the listed output schemas
  const pick = (i: number) => ids[(i * 7919) % ids.length]!;

  const viaMcp = async (i: number) => {
    const result = await client.callTool({ name: 'ontology_get_node', arguments: { node_id: pick(i) } });
    if (result.isError) throw new Error(`ontology_get_node: ${JSON.stringify(result.content)}`);
    return result;
  };
  const viaRoute = (i: number) => http('GET', `/v1/ontology/nodes/${pick(i)}`);
  const viaCap = (i: number) => http('POST', '/v1/cap/ontology.get_node', { node_id: pick(i) });
  const viaRawRpc = async (i: number) => {
    const response = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { ...headers, accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: i,
        method: 'tools/call',
        params: { name: 'ontology_get_node', arguments: { node_id: pick(i) } },
      }),
    });
    const answer = (await response.json()) as { result?: { isError?: boolean } };
    if (response.status !== 200 || !answer.result || answer.result.isError) throw new Error(JSON.stringify(answer));
    return answer;
  };
  const sample = (await viaMcp(0)).structuredContent as { edges: { outgoing: unknown[]; incoming: unknown[] } };
  if (sample.edges.outgoing.length !== 3 || sample.edges.incoming.length !== 3) {
    throw new Error(`expected 3 edges each way, got ${JSON.stringify(sample.edges)}`);
  }

  // The same two requests from a lean node:http client (bench/lib/http-client.ts): fetch's cost of a POST body,
  // paid on this thread, is the client's and not the server's.
  const lean = jsonClient(url, headers);
  const rpcBody = (i: number) => ({
    jsonrpc: '2.0',
    id: i,
    method: 'tools/call',
    params: { name: 'ontology_get_node', arguments: { node_id: pick(i) } },
  });
  const leanRpc = async (i: number) => {
    const answer = await lean.send('POST', '/mcp', rpcBody(i), { accept: 'application/json, text/event-stream' });
    if (!answer.result || answer.result.isError) throw new Error(JSON.stringify(answer));
    return answer;
  };
  const leanRoute = (i: number) => lean.send('GET', `/v1/ontology/nodes/${pick(i)}`);
  const rows: { subject: Measurement; anchor: Measurement }[] = [];
  // CPU per request of this process (the client and the server) and of the bench database's Postgres backends.
  const cpu = { weft: () => [process.pid], postgres: () => postgresBackends([service.database]) };
  const sides = [
    { client: 'fetch', subject: viaRawRpc, anchor: viaRoute },
    { client: 'node:http', subject: leanRpc, anchor: leanRoute },
  ];
  for (const { client: by, subject: rpc, anchor: get } of sides) {
    for (const concurrency of [1, 4]) {
      // Both warmed, then alternating phases (bench/lib/measure.ts): the side measured first no longer
      // pays the JIT's warm-up alone.
      const { subject, anchor } = await measureAlternating(
        { name: `ontology_get_node via MCP tools/call (${by})`, operation: rpc },
        { name: `GET /v1/ontology/nodes/{id} (${by})`, operation: get },
        { concurrency, durationMs: seconds * 1000, cpu },
      );
      rows.push({ subject, anchor });
      console.error(
        `[bench] get_node ${by} c=${concurrency}: ${subject.rps.toFixed(0)} req/s ` +
          `(p50 ${subject.p50.toFixed(2)} ms) | anchor ${anchor.rps.toFixed(0)} req/s ` +
          `(p50 ${anchor.p50.toFixed(2)} ms)`,
      );
    }
  }
  // The goal's figure: the same two requests from autocannon in a process of its own (bench/lib/external-load.ts),
  // so that the server's thread does the server's work only, as a service's throughput is measured.
  const generator = await externalLoad();
  const ring = Array.from({ length: 256 }, (_, i) => i);
  const external = {
    mcp: {
      name: 'ontology_get_node via MCP tools/call (autocannon)',
      run: {
        url,
        headers: { ...headers, accept: 'application/json, text/event-stream' },
        requests: ring.map((i) => ({ method: 'POST' as const, path: '/mcp', body: JSON.stringify(rpcBody(i)) })),
        failedWhen: '"isError":true',
      },
    },
    route: {
      name: 'GET /v1/ontology/nodes/{id} (autocannon)',
      run: {
        url,
        headers,
        requests: ring.map((i) => ({ method: 'GET' as const, path: `/v1/ontology/nodes/${pick(i)}` })),
      },
    },
  };
  const goalRows: { subject: Measurement; anchor: Measurement }[] = [];
  // The server's CPU per request is this process's alone now; the generator's is its own.
  const serverCpu = { ...cpu, generator: () => [generator.pid] };
  for (const connections of [1, 4]) {
    const measured = await generator.alternate(external.mcp, external.route, {
      connections,
      seconds,
      cpu: serverCpu,
    });
    goalRows.push(measured);
    console.error(
      `[bench] get_node autocannon c=${connections}: ${measured.subject.rps.toFixed(0)} req/s | anchor ` +
        `${measured.anchor.rps.toFixed(0)} req/s`,
    );
  }
  await generator.stop();

  const pairs = [
    {
      name: 'MCP tools/call (SDK client)',
      anchorName: 'GET /v1/ontology/nodes/{id}',
      subject: viaMcp,
      anchor: viaRoute,
    },
    {
      name: 'POST /v1/cap/ontology.get_node',
      anchorName: 'GET /v1/ontology/nodes/{id}',
      subject: viaCap,
      anchor: viaRoute,
    },
    {
      name: 'raw JSON-RPC POST /mcp',
      anchorName: 'POST /v1/cap/ontology.get_node',
      subject: viaRawRpc,
      anchor: viaCap,
    },
  ];
  const paired = [];
  for (const pair of pairs) paired.push({ pair, ...(await pairedOverhead(pair.subject, pair.anchor, seconds * 2000)) });

  const measureRuns = async () => {
    // The second measure: a parent that starts a 1-step child and waits for it, against the two
    // runs dispatched one after the other by a client.
    await ensureSearchAttributes(runtime.temporal);
    // The worker process also runs bench/runs.ts's anchor workflows, on a queue of their own.
    service.env.BENCH_ANCHOR_TASK_QUEUE = `${service.env.TEMPORAL_TASK_QUEUE}-anchor`;
    const worker = await forkWorker(service.env);
    const balance = { tool: 'billing.credits_balance', input: {} };
    const oneStep = { agent: 'playbook', input: { steps: [balance] } };
    const runToEnd = async (body: unknown) => {
      const { execution_id } = await http('POST', '/v1/runs', body, 202);
      const { status } = await runResult(runtime.temporal.client, execution_id);
      if (status !== 'SUCCEEDED') throw new Error(`run ${execution_id} ended ${status}`);
    };
    const parentAndChild = () =>
      runToEnd({
        agent: 'playbook',
        input: {
          steps: [
            { tool: 'runs.dispatch', input: oneStep },
            { tool: 'runs.wait', input: { execution_id: { $from: 'steps[0].output.execution_id' } } },
          ],
        },
      });
    const twoRuns = async () => {
      await runToEnd(oneStep);
      await runToEnd(oneStep);
    };
    await parentAndChild(); // warm both paths
    await twoRuns();
    const runsPaired = await pairedOverhead(parentAndChild, twoRuns, seconds * 4000);
    await worker.stop();
    return runsPaired;
  };
  const runsPaired = args.includes('--skip-runs') ? undefined : await measureRuns();

  console.log(`\nData: ${nodeCount} nodes, 3 edges out and 3 in each; ${seconds} s per point.`);
  console.log(
    'The MCP call and its anchor are sent by the same HTTP client: autocannon in a process of its own (the ' +
      "goal's measure), then fetch and node:http in this process; the SDK Client is a pair below.\n",
  );
  console.log(markdownTable([...goalRows, ...rows]));
  console.log(
    '\n| operation | clients | CPU ms/req, this process (the server; with fetch and node:http the client too) | ' +
      'Postgres | anchor: this process | Postgres | CPU ratio (anchor ÷ MCP) |\n|---|---|---|---|---|---|---|',
  );
  for (const { subject, anchor } of [...goalRows, ...rows]) {
    const [s, a] = [subject.cpuMsPerRequest!, anchor.cpuMsPerRequest!];
    const total = (use: Record<string, number>) => use.weft! + use.postgres!;
    console.log(
      `| ${subject.name} | ${subject.concurrency} | ${s.weft!.toFixed(3)} | ${s.postgres!.toFixed(3)} | ` +
        `${a.weft!.toFixed(3)} | ${a.postgres!.toFixed(3)} | ×${(total(a) / total(s)).toFixed(2)} |`,
    );
  }
  console.log('\n| pair (1 client, alternating) | pairs | p50 ms | anchor p50 ms | median difference ms | p50 ratio |');
  console.log('|---|---|---|---|---|---|');
  for (const { pair, subjectP50, anchorP50, medianDifference, pairs: count } of paired) {
    console.log(
      `| ${pair.name} vs ${pair.anchorName} | ${count} | ${subjectP50.toFixed(2)} | ${anchorP50.toFixed(2)} | ` +
        `${medianDifference.toFixed(2)} | ×${(subjectP50 / anchorP50).toFixed(2)} |`,
    );
  }
  if (runsPaired) {
    console.log(
      `\n| runs (1 client, alternating) | pairs | p50 ms | anchor p50 ms | p50 ratio |\n|---|---|---|---|---|\n` +
        `| runs.dispatch + runs.wait of a 1-step child vs two sequential 1-step runs | ${runsPaired.pairs} | ` +
        `${runsPaired.subjectP50.toFixed(1)} | ${runsPaired.anchorP50.toFixed(1)} | ` +
        `×${(runsPaired.subjectP50 / runsPaired.anchorP50).toFixed(2)} |`,
    );
  }
  console.log('\n| goal | result |\n|---|---|');
  for (const { subject, anchor } of goalRows) {
    const ratio = subject.rps / anchor.rps;
    console.log(
      `| ${subject.name} ≥ ${GET_NODE_GOAL}× ${anchor.name} req/s, ${subject.concurrency} ` +
        `client${subject.concurrency > 1 ? 's' : ''} | ${ratio >= GET_NODE_GOAL ? 'met' : '**missed**'}: ` +
        `×${ratio.toFixed(2)} |`,
    );
  }
  if (runsPaired) {
    const runsRatio = runsPaired.subjectP50 / runsPaired.anchorP50;
    console.log(
      `| runs.dispatch + runs.wait ≤ ${RUNS_GOAL}× two sequential 1-step runs (p50) | ` +
        `${runsRatio <= RUNS_GOAL ? 'met' : '**missed**'}: ×${runsRatio.toFixed(2)} |`,
    );
  }
  await client.close();
  lean.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await service.stop();
}
