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
import { markdownTable, numberOption, timeEach } from './lib/measure';
import { bootBenchService } from './lib/servers';

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
  const calls = Array.from({ length: count }, (_, i) => i);
  const anchor = await timeEach('SDK client: connect, tools/call, close (anchor)', calls, direct);
  const subject = await timeEach('capability layer: tracker.lookup_issue (a step’s call)', calls, (i) =>
    runtime.services.capabilities.invoke(principal, 'tracker.lookup_issue', { id: i }, { chargeKey: `bench:${i}` }),
  );

  console.log(`\nOne client, ${count} calls per point.\n`);
  console.log(markdownTable([{ subject, anchor }]));
  console.log(`\np50 ratio ${(subject.p50 / anchor.p50).toFixed(2)}× (+${(subject.p50 - anchor.p50).toFixed(2)} ms)`);

  await runtime.services.connectors.remove(principal, connector.id);
  await remote.stop();
  await service.stop();
}
