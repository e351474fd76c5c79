/**
 * `npm run bench -- protocols-mcp [--runs 40]` (meant to join `npm run bench -- protocols`)
 *
 * MCP task creation (issue 42 item 1) to its first status update: the SDK's own client calls
 * `runs_dispatch` with `task` for a one-step playbook (`callToolStream`: the `tools/call` answered
 * with the task, then `tasks/get`), the clock stopping at the first `taskStatus`. Its anchor,
 * interleaved with it in the same run: `POST /v1/runs` of the same playbook to the first event of
 * its SSE stream (`GET /v1/runs/{id}/events`). Goal: MCP p50 ≤ 1.2× the anchor's. A worker process
 * runs the runs, so they finish as they would in production; both clocks stop before they must.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createApp } from '../src/app/http';
import { ensureSearchAttributes } from '../src/platform/temporal/connection';
import type { Measurement } from './lib/measure';
import { numberOption, percentile } from './lib/measure';
import { forkWorker } from './lib/run-worker';
import { bootBenchService, serveLocally } from './lib/servers';
import type { ProtocolBenchContext, ProtocolSubject } from './protocols';

const PLAYBOOK = { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance', input: {} }] } };

const figures = (name: string, samples: number[]): Measurement => {
  const sorted = [...samples].sort((a, b) => a - b);
  const total = samples.reduce((sum, ms) => sum + ms, 0) / 1000;
  const at = (p: number) => percentile(sorted, p);
  return {
    name,
    concurrency: 1,
    count: sorted.length,
    rps: sorted.length / total,
    p50: at(50),
    p95: at(95),
    p99: at(99),
  };
};

/** An MCP client of `baseUrl` with `token`, its tool list read (so callToolStream sends `task` itself). */
export async function connectTaskClient(baseUrl: string, token: string): Promise<Client> {
  const client = new McpClient({ name: 'weft-bench-tasks', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  await client.listTools();
  return client;
}

/** One MCP task creation: to the `tools/call`'s answer (the task) and to its first status update, in ms. */
async function mcpTaskOnce(
  client: Client,
  run: Record<string, unknown> = PLAYBOOK,
): Promise<{ created: number; status: number }> {
  const t0 = performance.now();
  let created = 0;
  const stream = client.experimental.tasks.callToolStream({ name: 'runs_dispatch', arguments: run });
  for await (const message of stream) {
    if (message.type === 'taskCreated') created = performance.now() - t0;
    if (message.type === 'taskStatus') {
      const status = performance.now() - t0;
      await stream.return(undefined);
      return { created, status };
    }
    if (message.type === 'error') throw message.error;
  }
  throw new Error('the task stream ended without a status');
}

/** One `POST /v1/runs` to the first event of the run's SSE stream, in milliseconds. */
async function restRunOnce(baseUrl: string, token: string): Promise<number> {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const t0 = performance.now();
  const posted = await fetch(`${baseUrl}/v1/runs`, { method: 'POST', headers, body: JSON.stringify(PLAYBOOK) });
  if (!posted.ok) throw new Error(`POST /v1/runs → ${posted.status}`);
  const { execution_id } = (await posted.json()) as { execution_id: string };
  const abort = new AbortController();
  const stream = await fetch(`${baseUrl}/v1/runs/${execution_id}/events`, { headers, signal: abort.signal });
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of stream.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      if (/^data: /m.test(buffer)) return performance.now() - t0;
    }
  } finally {
    abort.abort();
  }
  throw new Error('the run stream ended without an event');
}

/**
 * MCP task creation to its first status update against `POST /v1/runs` to its first SSE event, one
 * after the other `runs` times each (after a warm-up of each), against the API at `baseUrl`.
 */
export async function measureMcpTasks(baseUrl: string, token: string, runs: number) {
  const client = await connectTaskClient(baseUrl, token);
  try {
    for (let i = 0; i < 3; i++) {
      await mcpTaskOnce(client);
      await restRunOnce(baseUrl, token);
    }
    const mcp: { created: number; status: number }[] = [];
    const rest: number[] = [];
    for (let i = 0; i < runs; i++) {
      mcp.push(await mcpTaskOnce(client));
      rest.push(await restRunOnce(baseUrl, token));
    }
    const subject = figures(
      'MCP tools/call (task) → first tasks/get status',
      mcp.map((one) => one.status),
    );
    const created = figures(
      'MCP tools/call (task) → its answer (the task)',
      mcp.map((one) => one.created),
    );
    const anchor = figures('POST /v1/runs → first SSE event (anchor)', rest);
    return { subject, created, anchor, ratio: subject.p50 / anchor.p50 };
  } finally {
    await client.close();
  }
}

/**
 * The MCP door as a subject of `npm run bench -- protocols` (bench/protocols.ts): an `llm` run with the
 * bench's goal started as a task, to its first status update, beside the A2A door and the same anchor.
 */
export async function protocolSubjects(context: ProtocolBenchContext): Promise<ProtocolSubject[]> {
  const client = await connectTaskClient(context.baseUrl, context.token);
  return [
    {
      name: 'MCP tools/call (task) → first status',
      async firstStatus() {
        await mcpTaskOnce(client, { agent: 'llm', input: { goal: context.goal } });
      },
    },
  ];
}

export async function run(args: string[]): Promise<void> {
  const runs = numberOption(args, 'runs', 40);
  const service = await bootBenchService({ queue: 'weft-bench-protocols-mcp' });
  await ensureSearchAttributes(service.runtime.temporal);
  // The bench worker process also serves the runs bench's anchor workflows, on a queue of their own.
  service.env.BENCH_ANCHOR_TASK_QUEUE = `${service.env.TEMPORAL_TASK_QUEUE}-anchor`;
  const worker = await forkWorker(service.env);
  const { server, url } = await serveLocally(createApp(service.runtime));
  try {
    const tenant = await service.provisioning.bootstrap({ name: 'weft-bench-protocols-mcp', credits: 1_000_000 });
    const { subject, created, anchor, ratio } = await measureMcpTasks(url, tenant.api_key, runs);
    console.log('| operation | count | p50 ms | p95 ms | p99 ms |\n|---|---|---|---|---|');
    for (const row of [subject, created, anchor]) {
      console.log(
        `| ${row.name} | ${row.count} | ${row.p50.toFixed(2)} | ${row.p95.toFixed(2)} | ${row.p99.toFixed(2)} |`,
      );
    }
    console.log(`\nMCP task p50 / anchor p50: ×${ratio.toFixed(2)} (goal ≤ ×1.2)`);
  } finally {
    server.close();
    await worker.stop();
    await service.stop();
  }
}
