/**
 * `npm run bench -- round-trips`
 *
 * How many messages each request kind sends to Postgres (each one a round trip: a write, a context
 * switch to the server and back), counted at pg's Client.query in this process, and how many of
 * them are sent while the workspace's claim lock is held. On this 2-core machine a round trip costs
 * more than the CPU work of a small request (see `npm run bench -- profile`: pg's socket writes are
 * the largest single item), and the count, unlike the milliseconds, does not move with the load of
 * other processes. Each request kind is sent 20 times after a warm-up; the median count is printed.
 * `--trace <text>` also prints the messages of the last request of each kind whose name contains `<text>`.
 */

import { Client } from 'pg';
import { createApp } from '../src/app/http';
import { stringOption } from './lib/measure';
import { bootBenchService, serveLocally } from './lib/servers';

export async function run(args: string[] = []): Promise<void> {
  const trace = stringOption(args, 'trace');
  const service = await bootBenchService();
  const { runtime, owner, provisioning } = service;
  const tenant = await provisioning.bootstrap({ name: 'weft-bench-round-trips' });
  const [parent, child]: { id: string }[] = await owner.query(
    `INSERT INTO nodes (workspace_id, type, name) SELECT $1, 'code.module', 'rt ' || g FROM generate_series(0, 1) g
     RETURNING id`,
    [tenant.workspace_id],
  );
  await owner.query(
    `INSERT INTO edges (workspace_id, type, source_node_id, target_node_id) VALUES ($1, 'CONTAINS', $2, $3)`,
    [tenant.workspace_id, parent!.id, child!.id],
  );
  const api = await serveLocally(createApp(runtime));
  const headers = { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' };
  const send = async (
    method: string,
    path: string,
    body?: unknown,
    extra: Record<string, string> = {},
    status = 200,
  ) => {
    const response = await fetch(`${api.url}${path}`, {
      method,
      headers: { ...headers, ...extra },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status !== status) throw new Error(`${path} → ${response.status} ${text.slice(0, 200)}`);
    return JSON.parse(text);
  };

  // Every query of this process passes here; a claim lock's statement marks the start of the hold.
  let count = 0;
  let underLock = 0;
  let locked = false;
  let texts: string[] = [];
  const original = Client.prototype.query;
  Client.prototype.query = function (this: Client, ...args: unknown[]) {
    const text = typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string })?.text ?? '');
    count++;
    texts.push(text);
    if (locked) underLock++;
    if (text.includes('pg_advisory_xact_lock') && JSON.stringify(args[1] ?? '').includes('agent-claims:')) {
      locked = true;
      underLock = 1;
    }
    if (/^\s*(COMMIT|ROLLBACK)/i.test(text)) locked = false;
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;

  const session = (await send('POST', '/v1/cap/agent.start_session', { name: 'rt' })).result.session_id as string;
  const replayKey = `rt-${Date.now()}`;
  await send('POST', '/v1/cap/agent.start_session', { name: 'replayed' }, { 'Idempotency-Key': replayKey });
  const kinds: { name: string; prepare?: () => Promise<string>; request: (id?: string) => Promise<unknown> }[] = [
    {
      name: 'GET /v1/auth/me/api-keys/scopes (authentication only)',
      request: () => send('GET', '/v1/auth/me/api-keys/scopes'),
    },
    { name: 'GET /v1/ontology/nodes/{id}', request: () => send('GET', `/v1/ontology/nodes/${child!.id}`) },
    {
      name: 'GET /v1/ontology/nodes?type=…&limit=50',
      request: () => send('GET', '/v1/ontology/nodes?type=code.module&limit=50'),
    },
    {
      name: 'ontology.get_node via POST /v1/cap',
      request: () => send('POST', '/v1/cap/ontology.get_node', { node_id: child!.id }),
    },
    {
      name: 'ontology_get_node via MCP tools/call (JSON-RPC POST /mcp)',
      request: () =>
        send(
          'POST',
          '/mcp',
          {
            jsonrpc: '2.0',
            id: 1,
            method: 'tools/call',
            params: { name: 'ontology_get_node', arguments: { node_id: child!.id } },
          },
          { accept: 'application/json, text/event-stream' },
        ),
    },
    {
      name: 'agent.start_session replayed (Idempotency-Key)',
      request: () =>
        send('POST', '/v1/cap/agent.start_session', { name: 'replayed' }, { 'Idempotency-Key': replayKey }),
    },
    {
      name: 'agent.heartbeat (no key)',
      request: () => send('POST', '/v1/cap/agent.heartbeat', { session_id: session }),
    },
    {
      name: 'agent.claim_work + agent.release_claim (no key)',
      request: async () => {
        const claimed = await send('POST', '/v1/cap/agent.claim_work', {
          session_id: session,
          target_node_id: child!.id,
          intent: 'rt',
        });
        await send('POST', '/v1/cap/agent.release_claim', { claim_id: claimed.result.claim_id });
      },
    },
  ];
  // A run's one step, as its activities run it (issue 27): separately (begin, the rules' decision, the
  // step, the finish: four activities) and fused into the step's own transactions. No worker serves this
  // bench's queue, so the dispatched runs wait for these calls alone.
  const steps = runtime.services.runSteps;
  const dispatchRun = async () =>
    (
      await send(
        'POST',
        '/v1/runs',
        { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance' }] } },
        {},
        202,
      )
    ).execution_id as string;
  const workspace = tenant.workspace_id;
  kinds.push(
    { name: 'POST /v1/runs (a one-step playbook; its workflow started, no worker)', request: dispatchRun },
    {
      name: "a run's step, run by four activities (begin, decide, step, finish; before issue 27's round 3)",
      prepare: dispatchRun,
      request: async (id) => {
        await steps.beginRun(workspace, id!);
        await steps.decidePolicy(workspace, id!, 0);
        await steps.runStep(workspace, id!, 0);
        await steps.finishRun(workspace, id!, { status: 'SUCCEEDED', error: null });
      },
    },
    {
      name: "a run's step, fused: its activity begins, decides and finishes the run",
      prepare: dispatchRun,
      request: (id) => steps.runStep(workspace, id!, 0, { begin: true, decide: true, finish: true }),
    },
  );
  console.log('| request | round trips to Postgres | of them under the claim lock |\n|---|---|---|');
  for (const kind of kinds) {
    await kind.request(await kind.prepare?.());
    const counts: number[] = [];
    const locks: number[] = [];
    for (let i = 0; i < 20; i++) {
      const id = await kind.prepare?.();
      count = 0;
      underLock = 0;
      texts = [];
      await kind.request(id);
      counts.push(count);
      locks.push(underLock);
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
    console.log(`| ${kind.name} | ${median(counts)} | ${median(locks) || '–'} |`);
    if (trace && kind.name.includes(trace)) {
      for (const [at, text] of texts.entries()) console.log(`  ${at + 1}. ${text.replace(/\s+/g, ' ').slice(0, 160)}`);
    }
  }
  Client.prototype.query = original;

  await new Promise<void>((resolve) => api.server.close(() => resolve()));
  await service.stop();
}
