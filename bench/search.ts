/**
 * `npm run bench -- search [--nodes 100000] [--seconds 2] [--only <label text>]`: search at 100k
 * clustered 512-dim vectors plus a small workspace with 1% as many, through HTTP next to the same SQL
 * through `pg` in the same run (vector, keyword and hybrid rows, hybrid as the contract's defaults
 * leave it and with a `keyword_weight`; `--only identifier,vector k10` runs only the rows whose label
 * holds one of those texts (`--only "=hybrid k10"`: exactly that label), prints them and skips the
 * storage and pipeline sections and the results file), recall@k against exact search, inline (PLAIN)
 * vs TOASTed vectors, and the embedding pipeline's throughput through the worker with the local
 * provider. Data is loaded once into weft_bench (bench/lib/search-data.ts) and reused by later runs.
 */

import { loadavg } from 'node:os';
import { Pool } from 'pg';
import { createActivities } from '../activities';
import { createApp } from '../src/app/http';
import { createNodeInTransaction } from '../src/graph/writes';
import { readOntologyConfig } from '../src/ontology-config/service';
import { localEmbedding } from '../src/platform/llm/embedding/local';
import { ensureSearchAttributes } from '../src/platform/temporal/connection';
import { enableIterativeIndexScan, structuralCandidates, vectorCandidates } from '../src/search/repository';
import type { SearchMode } from '../src/search/schemas';
import { createWorker } from '../workers/worker';
import type { Measurement } from './lib/measure';
import { markdownTable, measure, numberOption } from './lib/measure';
import type { BenchWorkspace } from './lib/search-data';
import {
  asManager,
  CLUSTERS,
  ensureToastedCopy,
  loadSearchWorkspaces,
  searchSql,
  setSearchSettings,
  TYPES,
  topicOf,
} from './lib/search-data';
import { bootBenchService, serveLocally } from './lib/servers';

async function main(args: string[]) {
  const totalNodes = numberOption(args, 'nodes', 100_000);
  const seconds = numberOption(args, 'seconds', 2);
  const onlyAt = args.indexOf('--only');
  const only = onlyAt >= 0 ? args[onlyAt + 1] : undefined;
  // Other sessions share the 2 cores: the figures name the load they were measured under.
  const loadAtStart = loadavg()[0]!;
  const service = await bootBenchService({ settings: { DATABASE_POOL_SIZE: '10' } });
  const { config, runtime, owner, provisioning } = service;
  const out: string[] = [];
  const log = (line = '') => {
    console.log(line);
    out.push(line);
  };

  const { big, small, ageDays } = await loadSearchWorkspaces(service, totalNodes);
  console.error(`[bench] the newest node was touched ${ageDays.toFixed(1)} days ago`);
  await ensureToastedCopy(owner, big);

  // ---- the API in this process ----
  const { server, url: baseUrl } = await serveLocally(createApp(runtime));
  const queries = Array.from(
    { length: 64 },
    (_, i) => `${topicOf((i * 37) % CLUSTERS)} ${['alpha', 'beta', 'gamma', 'delta'][i % 4]}`,
  );
  // Identifier queries for keyword search: a node's name number, as a user pastes an id or a code
  // (`node 4711` finds node 4711 and the few whose number starts with 4711).
  const identifiers = Array.from({ length: 64 }, (_, i) => `node ${(i * 7919) % totalNodes}`);
  type QuerySet = 'topic' | 'identifier';
  const textOf = (set: QuerySet, i: number) =>
    set === 'topic' ? queries[i % queries.length]! : identifiers[i % identifiers.length]!;
  const http = (t: { api_key: string }, body: object, set: QuerySet) => async (i: number) => {
    const response = await fetch(`${baseUrl}/v1/ontology/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, q: textOf(set, i) }),
    });
    if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
    await response.arrayBuffer();
  };

  // The same statements a search request runs, through pg (bench/lib/search-data.ts).
  const appPool = new Pool({ connectionString: config.DATABASE_URL, max: 10 });
  const ownerPool = new Pool({ connectionString: config.DATABASE_OWNER_URL, max: 10 });
  const sql = (t: BenchWorkspace, mode: SearchMode, topK: number, types: string[], set: QuerySet) => (i: number) =>
    searchSql(appPool, t, { mode, topK, types, q: textOf(set, i) })();

  const opts = (concurrency: number) => ({ concurrency, durationMs: seconds * 1000, warmupMs: 300 });
  const rows: { subject: Measurement; anchor?: Measurement }[] = [];
  const goals: string[] = [];
  interface Case {
    label: string;
    t: BenchWorkspace;
    mode: SearchMode;
    topK: number;
    types: string[];
    set: QuerySet;
    /** The workspace's search settings for this row; the contract's defaults (keyword_weight 0) otherwise. */
    settings?: { keyword_weight: number };
  }
  let cases: Case[] = [];
  for (const mode of ['hybrid', 'vector'] as const) {
    for (const topK of [10, 20]) {
      for (const types of [[], ['type_3']]) {
        cases.push({
          label: `${mode} k${topK}${types.length ? ' type' : ''}`,
          t: big,
          mode,
          topK,
          types,
          set: 'topic',
        });
      }
    }
  }
  cases.push({ label: 'hybrid k10 small-ws', t: small, mode: 'hybrid', topK: 10, types: [], set: 'topic' });
  cases.push({ label: 'vector k10 small-ws', t: small, mode: 'vector', topK: 10, types: [], set: 'topic' });
  // Keyword search (GIN over the generated tsvector): alone, in hybrid as the workspace leaves it
  // (keyword_weight 0: no keyword search), and as hybrid's third term when a workspace weights it.
  for (const types of [[], ['type_3']]) {
    const at = { t: big, topK: 10, types, set: 'identifier' as const };
    const suffix = types.length ? ' type' : '';
    cases.push({ ...at, label: `keyword k10 identifier${suffix}`, mode: 'keyword' });
    cases.push({ ...at, label: `hybrid k10 identifier${suffix}`, mode: 'hybrid' });
    const settings = { keyword_weight: 0.3 };
    cases.push({ ...at, label: `hybrid k10 identifier${suffix}, keyword_weight 0.3`, mode: 'hybrid', settings });
  }
  // `--only "=hybrid k10"` runs that row alone; without "=" every row whose label holds the text.
  const picked = (label: string, part: string) =>
    part.startsWith('=') ? label === part.slice(1) : label.includes(part);
  if (only) cases = cases.filter((c) => only.split(',').some((part) => picked(c.label, part)));
  for (const c of cases) {
    await setSearchSettings(runtime.uow, [c.t], c.settings ?? {});
    for (const concurrency of [1, 4]) {
      const anchor = await measure(`SQL ${c.label}`, sql(c.t, c.mode, c.topK, c.types, c.set), opts(concurrency));
      const subject = await measure(
        `HTTP ${c.label}`,
        http(c.t, { mode: c.mode, top_k: c.topK, filters: { type: c.types } }, c.set),
        opts(concurrency),
      );
      rows.push({ subject, anchor });
      if (concurrency === 4) {
        goals.push(
          `| ${c.label} | ${(subject.rps / anchor.rps).toFixed(2)} ${subject.rps >= 0.6 * anchor.rps ? '✓' : '✗'} | ` +
            `${subject.p95.toFixed(2)} vs ${(anchor.p95 + 3).toFixed(2)} ` +
            `${subject.p95 <= anchor.p95 + 3 ? '✓' : '✗'} | ` +
            `${subject.p95.toFixed(2)} ${subject.p95 <= 10 ? '✓' : '✗'} |`,
        );
      }
    }
  }

  // ---- recall@k against exact search (same filters, same workspace, no index) ----
  const recallRows: string[] = [];
  for (const c of cases.filter((x) => x.mode === 'vector')) {
    let hits = 0;
    let wanted = 0;
    let short = 0;
    for (let i = 0; i < 30; i++) {
      const embedding = localEmbedding(queries[(i * 5) % queries.length]!);
      const client = await appPool.connect();
      try {
        const m = asManager(client);
        await client.query('BEGIN');
        await client.query(`SELECT set_config('app.workspace_id', $1, true)`, [c.t.workspace_id]);
        await enableIterativeIndexScan(m, c.topK, c.types);
        const found = await vectorCandidates(m, {
          workspaceId: c.t.workspace_id,
          embedding,
          topK: c.topK,
          types: c.types,
          minSimilarity: 0,
        });
        const exact: { id: string; d: number }[] = await m.query(
          `SELECT id, embedding <=> $1::vector AS d FROM nodes WHERE workspace_id = $2 AND NOT is_deleted
           AND embedding IS NOT NULL
             ${c.types.length ? 'AND type = ANY($4::text[])' : ''} ORDER BY (embedding <=> $1::vector) + 0 LIMIT $3`,
          [`[${embedding.join(',')}]`, c.t.workspace_id, c.topK, ...(c.types.length ? [c.types] : [])],
        );
        await client.query('COMMIT');
        const kth = exact.at(-1)?.d ?? 0;
        hits += found.filter((row) => 1 - row.similarity <= kth + 1e-6).length;
        wanted += exact.length;
        if (found.length < exact.length) short += 1;
      } finally {
        client.release();
      }
    }
    recallRows.push(`| ${c.label} | ${(hits / wanted).toFixed(3)} | ${short} of 30 |`);
  }

  if (only) {
    console.log(markdownTable(rows));
    for (const goal of goals) console.log(goal);
    server.close();
    await appPool.end();
    await ownerPool.end();
    await service.stop();
    return;
  }

  // ---- inline vs TOASTed vectors: the hybrid SQL on the owner connection, one client ----
  const storage = async (schema: string) => {
    const name = `hybrid SQL k10, ${schema === 'public' ? 'PLAIN (inline)' : 'EXTERNAL (TOASTed)'}`;
    return measure(
      name,
      async (i) => {
        const client = await ownerPool.connect();
        try {
          const m = asManager(client);
          await client.query('BEGIN');
          await client.query(`SET LOCAL search_path = ${schema}, public`);
          await enableIterativeIndexScan(m, 10);
          const embedding = localEmbedding(queries[i % queries.length]!);
          await vectorCandidates(m, {
            workspaceId: big.workspace_id,
            embedding,
            topK: 10,
            types: [],
            minSimilarity: 0.7,
          });
          await structuralCandidates(m, { workspaceId: big.workspace_id, topK: 10, types: [] });
          await client.query('COMMIT');
        } finally {
          client.release();
        }
      },
      opts(1),
    );
  };
  const plain = await storage('public');
  const toasted = await storage('bench_toast');
  const exactScan = async (schema: string) =>
    measure(
      `exact top-10 scan, ${schema === 'public' ? 'PLAIN' : 'TOASTed'}`,
      async (i) => {
        await ownerPool.query(
          `SELECT id FROM ${schema}.nodes WHERE workspace_id = $2 ORDER BY (embedding <=> $1::vector) + 0 LIMIT 10`,
          [`[${localEmbedding(queries[i % queries.length]!).join(',')}]`, big.workspace_id],
        );
      },
      { concurrency: 1, durationMs: seconds * 1000, warmupMs: 200 },
    );
  const plainScan = await exactScan('public');
  const toastScan = await exactScan('bench_toast');

  // ---- embedding pipeline throughput through the worker (local provider) ----
  await ensureSearchAttributes(runtime.temporal);
  const { worker, connection } = await createWorker({
    config,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities: createActivities(runtime),
  });
  const running = worker.run();
  const embedTenant = await provisioning.bootstrap({ credits: 1_000_000, name: `weft-bench-embed-${Date.now()}` });
  const EMBED_NODES = numberOption(args, 'embed-nodes', 2000);
  const t0 = Date.now();
  for (let start = 0; start < EMBED_NODES; start += 200) {
    await runtime.uow({ workspaceId: embedTenant.workspace_id }, async (m) => {
      const importance = (await readOntologyConfig(m)).importance;
      for (let i = start; i < Math.min(EMBED_NODES, start + 200); i++) {
        await createNodeInTransaction(
          m,
          embedTenant.workspace_id,
          { type: 'topic', name: `${topicOf(i % CLUSTERS)} item ${i}` },
          { importance },
        );
      }
    });
  }
  const created = Date.now();
  // Deliver every outbox row now (the API's fast path plus the minute sweep would, more slowly).
  while ((await runtime.outbox.dispatchWorkspace(embedTenant.workspace_id)) > 0);
  for (;;) {
    const [row] = await owner.query(
      `SELECT count(*) FILTER (WHERE has_embedding) AS done FROM nodes WHERE workspace_id = $1`,
      [embedTenant.workspace_id],
    );
    if (Number(row.done) >= EMBED_NODES) break;
    if (Date.now() - t0 > 180_000) throw new Error(`embedding pipeline stalled at ${row.done}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const embedSeconds = (Date.now() - t0) / 1000;
  const localOnly = await measure(
    'local provider alone, 64 names per call',
    async (i) => {
      for (let j = 0; j < 64; j++) localEmbedding(`${topicOf((i + j) % CLUSTERS)} item ${j}`);
    },
    { concurrency: 1, durationMs: 1000, warmupMs: 100 },
  );

  // ---- report ----
  const [{ version }] = await owner.query(`SELECT extversion AS version FROM pg_extension WHERE extname = 'vector'`);
  const counts = await owner.query(
    `SELECT (SELECT count(*) FROM nodes) AS total,
            (SELECT count(*) FROM nodes WHERE workspace_id = $1) AS big,
            (SELECT count(*) FROM nodes WHERE workspace_id = $2) AS small`,
    [big.workspace_id, small.workspace_id],
  );
  log(`## Search benchmark (\`npm run bench -- search\`)`);
  log();
  log(
    `${new Date().toISOString()}, ${totalNodes} nodes in the big workspace (${counts[0].big}), ` +
      `${counts[0].small} in the small one, ${counts[0].total} in the table; ${CLUSTERS} clusters, ` +
      `${TYPES} types (\`filters.type\` = one type, 10%), touched over 60 days up to ${ageDays.toFixed(1)} days ago; ` +
      `pgvector ${version}; ${seconds} s per row; load average ${loadAtStart.toFixed(1)} at the start, ` +
      `${loadavg()[0]!.toFixed(1)} at the end; ` +
      'HTTP client and server in one Node process on 2 cores.',
  );
  log(
    '"SQL" is the same statements a request runs (charge + settings transaction, then the search transaction ' +
      "with iterative HNSW scan, hybrid's two lists in one statement) through `pg`, without HTTP, auth and TypeORM.",
  );
  log();
  log(markdownTable(rows));
  log();
  log(`Goals at 4 clients: req/s ≥ 0.6 × SQL, p95 ≤ SQL p95 + 3 ms, p95 ≤ 10 ms.`);
  log();
  log(`| case | req/s ratio | p95 vs SQL p95 + 3 | p95 ≤ 10 ms |`);
  log(`|---|---|---|---|`);
  for (const goal of goals) log(goal);
  log();
  log(
    'Recall@k of the vector search (HNSW, iterative scan, ef_search = max(100, 4k)) against exact search, ' +
      '30 queries each:',
  );
  log();
  log(`| case | recall@k | queries with fewer than k rows |`);
  log(`|---|---|---|`);
  for (const row of recallRows) log(row);
  log();
  log(`Inline vs TOASTed embedding column (same data, same indexes, one client):`);
  log();
  log(
    markdownTable([
      { subject: plain, anchor: toasted },
      { subject: plainScan, anchor: toastScan },
    ]),
  );
  log();
  log(
    'Embedding pipeline (outbox → signal-with-start → embedding queue workflow → charge, local provider, write), ' +
      `${EMBED_NODES} nodes created in transactions of 200: ${(EMBED_NODES / embedSeconds).toFixed(0)} nodes/s ` +
      `end to end (${embedSeconds.toFixed(1)} s, creation took ${((created - t0) / 1000).toFixed(1)} s of it). ` +
      `The local provider alone embeds ${(localOnly.rps * 64).toFixed(0)} names/s.`,
  );

  const { writeFileSync } = await import('node:fs');
  writeFileSync(new URL('./RESULTS-search.md', `file://${__dirname}/`), `${out.join('\n')}\n`);

  worker.shutdown();
  await running;
  await connection.close();
  server.close();
  await appPool.end();
  await ownerPool.end();
  await service.stop();
}

export const run = main;
