/**
 * `npm run bench -- connectors [--calls 300]`
 *
 * Issue 41. A connector's read tool on a loopback MCP server (the tests' server, built with the
 * official SDK), called the way a run's step calls it: the capability layer's `invoke` (the tool's
 * lookup in the workspace's connectors, its charge and confirmation, the guarded way out, a fresh
 * SDK client per call, the response cap). Anchor, measured in the same run: the same call made
 * directly with the SDK's client, also connecting afresh for each call. Goal: ≤ 1.5× the anchor's
 * p50 plus the step's own cost (the charge's two short transactions).
 *
 * One client, `--calls` calls per point, latencies in ms. Data goes into weft_bench.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Principal } from '../src/platform/auth/principal';
import { SCOPES } from '../src/platform/auth/scopes';
import { startMcpRemote } from '../test/helpers/remote-tools';
import type { Measurement } from './lib/measure';
import { markdownTable, numberOption, percentile } from './lib/measure';
import { bootBenchService } from './lib/servers';

async function timeEach(name: string, count: number, operation: (i: number) => Promise<unknown>) {
  const latencies: number[] = [];
  const started = process.hrtime.bigint();
  for (let i = 0; i < count; i++) {
    const t0 = process.hrtime.bigint();
    await operation(i);
    latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  return {
    name,
    concurrency: 1,
    count,
    rps: count / seconds,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
  } satisfies Measurement;
}

export async function run(args: string[]): Promise<void> {
  const count = numberOption(args, 'calls', 300);
  const service = await bootBenchService({
    queue: 'weft-bench-connectors',
    settings: { CONNECTOR_ALLOWED_CIDRS: '127.0.0.1/32' },
  });
  const { runtime, provisioning } = service;
  const remote = await startMcpRemote();
  const tenant = await provisioning.bootstrap({ name: 'weft-bench-connectors', credits: count * 2 + 10 });
  const principal: Principal = {
    userId: tenant.user_id,
    workspaceId: tenant.workspace_id,
    tenantId: tenant.tenant_id,
    scopes: new Set(SCOPES),
    credential: { kind: 'user_jwt' },
  };
  const connector = await runtime.services.connectors.create(principal, {
    name: 'tracker',
    kind: 'mcp',
    url: remote.url,
    auth: { type: 'none' },
    timeout_seconds: 30,
    max_response_bytes: 1024 * 1024,
    credits_per_call: 1,
  });

  const direct = async (i: number) => {
    const client = new Client({ name: 'bench', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(remote.url)));
    try {
      await client.callTool({ name: 'lookup_issue', arguments: { id: i } });
    } finally {
      await client.close();
    }
  };
  // Warm both paths (module loading, the first connection, the workspace's tool cache).
  for (let i = 0; i < 20; i++) {
    await direct(i);
    await runtime.services.capabilities.invoke(principal, 'tracker.lookup_issue', { id: i });
  }
  const anchor = await timeEach('SDK client: connect, tools/call, close (anchor)', count, direct);
  const subject = await timeEach('capability layer: tracker.lookup_issue (a step’s call)', count, (i) =>
    runtime.services.capabilities.invoke(principal, 'tracker.lookup_issue', { id: i }, { chargeKey: `bench:${i}` }),
  );

  console.log(`\nOne client, ${count} calls per point.\n`);
  console.log(markdownTable([{ subject, anchor }]));
  console.log(`\np50 ratio ${(subject.p50 / anchor.p50).toFixed(2)}× (+${(subject.p50 - anchor.p50).toFixed(2)} ms)`);

  await runtime.services.connectors.remove(principal, connector.id);
  await remote.stop();
  await service.stop();
}
