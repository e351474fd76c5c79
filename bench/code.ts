/**
 * `npm run bench -- code [--seconds 3] [--samples 200]`
 *
 * The code graph on Weft's own repository (a `git clone` of the checkout the bench runs in):
 * 1. indexing speed end to end (parse with `weft index`'s code, batches over HTTP, each applied by
 *    the code-index workflow on a real worker): files/s and symbols/s for a first index and for a
 *    re-index that changes nothing (updates in place);
 * 2. symbol-context latency at 1 and 4 clients over HTTP (credit charge included) next to its
 *    anchor: the same SQL through `pg` (same role and row-level security, the workspace set once
 *    per connection): resolve by id, the iterative-scan setting and the one context statement.
 */
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Pool } from 'pg';
import { createActivities } from '../activities';
import { createApp } from '../src/app/http';
import { indexRepository } from '../src/cli/index/command';
import { SYMBOL_CONTEXT_SQL } from '../src/code/repository';
import { NODE_COLUMNS } from '../src/graph/repository';
import { ensureSearchAttributes } from '../src/platform/temporal/connection';
import { efSearchFor } from '../src/search/repository';
import { createWorker } from '../workers/worker';
import type { Measurement } from './lib/measure';
import { markdownTable, measure, numberOption } from './lib/measure';
import { bootBenchService, serveLocally } from './lib/servers';

const exec = promisify(execFile);
const ROOT = path.resolve(__dirname, '..');
const LIMIT = 20;

export async function run(args: string[]): Promise<void> {
  const seconds = numberOption(args, 'seconds', 3);
  const samples = numberOption(args, 'samples', 200);
  const service = await bootBenchService({ settings: { RATE_LIMIT_RPS: '0' } });
  const { config, runtime, owner, provisioning } = service;
  await ensureSearchAttributes(runtime.temporal);
  const { worker } = await createWorker({
    config,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities: createActivities(runtime),
    logLevel: 'error',
  });
  const running = worker.run();
  const api = await serveLocally(createApp(runtime));

  const clone = path.join(await mkdtemp(path.join(tmpdir(), 'weft-bench-code-')), 'weft');
  await exec('git', ['clone', '--quiet', ROOT, clone]);
  const tenant = await provisioning.bootstrap({ credits: 1_000_000, name: `weft-bench-code-${Date.now()}` });
  const index = () => indexRepository({ dir: clone, baseUrl: api.url, apiKey: tenant.api_key, maxCommits: 1000 });
  const first = await index();
  const again = await index();
  const speed = (label: string, s: typeof first) =>
    `| ${label} | ${s.files} | ${s.symbols} | ${s.edges} | ${s.commits} | ${s.batches} | ${s.seconds.toFixed(1)} | ` +
    `${(s.files / s.seconds).toFixed(0)} | ${(s.symbols / s.seconds).toFixed(0)} |`;

  // Semantic neighbours need vectors: deliver the outbox and wait for the embedding queue.
  const workspaceId = tenant.workspace_id;
  const embedStarted = Date.now();
  for (;;) {
    while ((await runtime.outbox.dispatchWorkspace(workspaceId)) > 0);
    const [row] = await owner.query(
      `SELECT count(*) FILTER (WHERE NOT has_embedding)::int AS left FROM nodes
       WHERE workspace_id = $1 AND NOT is_deleted`,
      [workspaceId],
    );
    if (row.left === 0) break;
    if (Date.now() - embedStarted > 300_000) throw new Error(`embedding stalled with ${row.left} nodes left`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const embedSeconds = (Date.now() - embedStarted) / 1000;

  // Fresh statistics, as autovacuum would have after a load this size (it is off on some machines).
  await owner.query('ANALYZE nodes, edges, code_symbols');
  const sample: { id: string }[] = await owner.query(
    `SELECT id FROM nodes WHERE workspace_id = $1 AND NOT is_deleted AND type IN ('code.function', 'code.method')
     ORDER BY random() LIMIT $2`,
    [workspaceId, samples],
  );
  const ids = sample.map((row) => row.id);
  const pick = (i: number) => ids[i % ids.length] as string;

  const headers = { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' };
  const http = async (i: number) => {
    const response = await fetch(`${api.url}/v1/ontology/symbol-context`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ node_id: pick(i), limit: LIMIT }),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`symbol-context → ${response.status} ${text.slice(0, 200)}`);
    return text;
  };
  const appPool = new Pool({ connectionString: config.DATABASE_URL, max: 8 });
  appPool.on('connect', (client) => {
    void client.query(`SELECT set_config('app.workspace_id', $1, false)`, [workspaceId]);
  });
  const sql = async (i: number) => {
    const client = await appPool.connect();
    try {
      const { rows } = await client.query(
        `SELECT ${NODE_COLUMNS}, n.properties->>'key' AS key, n.embedding::text AS vector
         FROM nodes n WHERE n.id = $1 AND NOT n.is_deleted`,
        [pick(i)],
      );
      await client.query(
        `SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false), set_config('hnsw.ef_search', $1, false)`,
        [String(efSearchFor(LIMIT))],
      );
      return await client.query(SYMBOL_CONTEXT_SQL, [
        pick(i),
        LIMIT,
        rows[0]?.vector ?? null,
        null,
        null,
        null,
        null,
        null,
        null,
      ]);
    } finally {
      client.release();
    }
  };

  const rows: { subject: Measurement; anchor: Measurement }[] = [];
  for (const concurrency of [1, 4]) {
    const subject = await measure('symbol-context', http, { concurrency, durationMs: seconds * 1000 });
    const anchor = await measure('same SQL via pg', sql, { concurrency, durationMs: seconds * 1000 });
    rows.push({ subject, anchor });
    console.error(
      `[bench] symbol-context c=${concurrency}: p95 ${subject.p95.toFixed(2)} ms | ` +
        `anchor p95 ${anchor.p95.toFixed(2)} ms`,
    );
  }

  console.log(`\nWeft's own repository (a clone of HEAD), 2-core machine, ${seconds} s per latency point.\n`);
  console.log('| pass | files | symbols | edges | commits | batches | seconds | files/s | symbols/s |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  console.log(speed('first index', first));
  console.log(speed('re-index, nothing changed', again));
  console.log(
    `\nEmbedding the ${first.created} new nodes afterwards (local provider): ${embedSeconds.toFixed(1)} s.\n`,
  );
  console.log(markdownTable(rows));
  console.log(
    `\n- p95 difference (ours − same SQL): ${rows
      .map((r) => `c=${r.subject.concurrency}: ${(r.subject.p95 - r.anchor.p95).toFixed(2)} ms`)
      .join('; ')} (goal ≤ 3 ms; ours includes the credit charge, its own transaction)`,
  );

  await new Promise<void>((resolve) => api.server.close(() => resolve()));
  await appPool.end();
  worker.shutdown();
  await running;
  await service.stop();
}
