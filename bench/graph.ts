/**
 * `npm run bench -- graph [--seconds 3] [--nodes 100000] [--edges 1000000] [--only <text>[,<text>…]]`
 * (`--only`: just the operations whose name contains one of the texts, for before/after pairs)
 *
 * Builds (once, then reuses) a workspace of 100k nodes and 1M power-law edges in weft_bench,
 * then measures, interleaved and at 1 and 4 clients, each graph read through HTTP next to its
 * anchor: the identical SQL through `pg` (same role, same row-level security), and for get-by-id
 * a bare Koa route doing one raw `pg` query. Every point runs for a few seconds, so the whole
 * bench ends in a few minutes.
 */

import Koa from 'koa';
import { Pool } from 'pg';
import { createApp } from '../src/app/http';
import { likePattern, NODE_COLUMNS, typeaheadSql, usesTrigram } from '../src/graph/repository';
import { OVERVIEW_SQL, STATS_SQL, SUBGRAPH_SQL } from '../src/graph/traversal-repository';
import { BENCH_WORKSPACE_NAME, loadPowerLawGraph } from './lib/graph-data';
import type { Measurement } from './lib/measure';
import { markdownTable, measure, numberOption } from './lib/measure';
import { bootBenchService, serveLocally } from './lib/servers';

export async function run(args: string[]): Promise<void> {
  const seconds = numberOption(args, 'seconds', 3);
  const nodeCount = numberOption(args, 'nodes', 100_000);
  const edgeCount = numberOption(args, 'edges', 1_000_000);
  const service = await bootBenchService();
  const { config, runtime, owner, provisioning } = service;

  // The data set: reused when a workspace of the expected size exists.
  const [existing]: { id: string }[] = await owner.query(
    `SELECT w.id FROM workspaces w WHERE w.name = $1
     AND (SELECT count(*) FROM nodes n WHERE n.workspace_id = w.id AND NOT n.is_deleted) = $2 LIMIT 1`,
    [BENCH_WORKSPACE_NAME, nodeCount],
  );
  let workspaceId = existing?.id;
  if (!workspaceId) {
    const fresh = await provisioning.bootstrap({ name: BENCH_WORKSPACE_NAME });
    workspaceId = fresh.workspace_id;
    const started = Date.now();
    console.error(`[bench] loading ${nodeCount} nodes and ${edgeCount} edges…`);
    await loadPowerLawGraph(owner, workspaceId, nodeCount, edgeCount);
    console.error(`[bench] loaded in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
  const { api_key: apiKey } = await provisioning.bootstrap({ workspaceId, name: 'bench-client' });

  const sample: { id: string }[] = await owner.query(
    `SELECT id FROM nodes WHERE workspace_id = $1 AND NOT is_deleted ORDER BY random() LIMIT 500`,
    [workspaceId],
  );
  const hubs: { id: string; degree: number }[] = await owner.query(
    `SELECT id, in_degree + out_degree AS degree FROM nodes WHERE workspace_id = $1 AND NOT is_deleted
     ORDER BY in_degree + out_degree DESC LIMIT 10`,
    [workspaceId],
  );
  const [counts]: { edges: number }[] = await owner.query(
    `SELECT count(*)::int AS edges FROM edges WHERE workspace_id = $1 AND NOT is_deleted`,
    [workspaceId],
  );
  const randomIds = sample.map((row) => row.id);
  const types = ['person', 'project', 'document', 'concept'];
  const terms = ['alpha', 'Person 12', 'beta', 'src/mod3', 'omega', 'Project 4'];
  const pick = <T>(list: T[], i: number) => list[i % list.length]!;

  // The service under test.
  const api = await serveLocally(createApp(runtime));
  const headers = { authorization: `Bearer ${apiKey}` };
  const http = async (path: string) => {
    const response = await fetch(`${api.url}${path}`, { headers });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${path} → ${response.status} ${text.slice(0, 200)}`);
    return text;
  };

  // Anchor 1: the same SQL through `pg`, as the app role with the workspace set once per connection.
  const appPool = new Pool({ connectionString: config.DATABASE_URL, max: 8 });
  appPool.on('connect', (client) => {
    void client.query(`SELECT set_config('app.workspace_id', $1, false)`, [workspaceId]);
  });
  const sql = (text: string, params: unknown[]) => appPool.query(text, params);

  // Anchor 2: a bare Koa route doing one raw `pg` query.
  const rawPool = new Pool({ connectionString: config.DATABASE_URL, max: 8 });
  rawPool.on('connect', (client) => {
    void client.query(`SELECT set_config('app.workspace_id', $1, false)`, [workspaceId]);
  });
  const bare = new Koa();
  bare.use(async (ctx) => {
    const { rows } = await rawPool.query(`SELECT ${NODE_COLUMNS} FROM nodes n WHERE n.id = $1 AND NOT n.is_deleted`, [
      ctx.path.slice(1),
    ]);
    ctx.body = rows[0];
  });
  const bareServer = await serveLocally(bare);

  // graph_stats cold: the first call after start, before anything warmed its plans.
  const coldStarted = process.hrtime.bigint();
  await http('/v1/ontology/graph_stats');
  const statsColdMs = Number(process.hrtime.bigint() - coldStarted) / 1e6;
  const sqlColdStarted = process.hrtime.bigint();
  await sql(STATS_SQL, [5]);
  const statsSqlColdMs = Number(process.hrtime.bigint() - sqlColdStarted) / 1e6;

  type Op = {
    name: string;
    http: (i: number) => Promise<unknown>;
    anchorName: string;
    anchor: (i: number) => Promise<unknown>;
    concurrency?: number[];
  };
  const subgraph = (ids: string[], depth: number, nodeLimit: number, edgeLimit: number) => (i: number) =>
    sql(SUBGRAPH_SQL, [[pick(ids, i)], depth, nodeLimit, edgeLimit]);
  const ops: Op[] = [
    {
      name: 'get node by id',
      http: (i) => http(`/v1/ontology/nodes/${pick(randomIds, i)}`),
      anchorName: 'bare Koa + pg',
      anchor: (i) => fetch(`${bareServer.url}/${pick(randomIds, i)}`).then((r) => r.text()),
    },
    {
      name: 'get node by id (vs SQL)',
      http: (i) => http(`/v1/ontology/nodes/${pick(randomIds, i)}`),
      anchorName: 'same SQL via pg',
      anchor: (i) =>
        sql(`SELECT ${NODE_COLUMNS} FROM nodes n WHERE n.id = $1 AND NOT n.is_deleted`, [pick(randomIds, i)]),
    },
    {
      name: 'list by type (limit 50)',
      http: (i) => http(`/v1/ontology/nodes?type=${pick(types, i)}&limit=50`),
      anchorName: 'same SQL via pg',
      anchor: (i) =>
        sql(
          `SELECT ${NODE_COLUMNS} FROM nodes n WHERE NOT n.is_deleted AND n.type = $1 ORDER BY n.created_at, n.id
           LIMIT 50 OFFSET 0`,
          [pick(types, i)],
        ),
    },
    {
      name: 'typeahead',
      http: (i) => http(`/v1/ontology/nodes/typeahead?q=${encodeURIComponent(pick(terms, i))}`),
      anchorName: 'same SQL via pg',
      anchor: (i) =>
        sql(typeaheadSql(NODE_COLUMNS), [
          pick(terms, i),
          likePattern(pick(terms, i)),
          null,
          20,
          usesTrigram(pick(terms, i)),
        ]),
    },
    ...[1, 2, 3].map((hops) => ({
      name: `neighborhood hops=${hops} (random)`,
      http: (i: number) => http(`/v1/ontology/graph_neighborhood?node_id=${pick(randomIds, i)}&hops=${hops}`),
      anchorName: 'same SQL via pg',
      anchor: subgraph(randomIds, hops, 300, 600),
    })),
    ...[2, 3].map((hops) => ({
      name: `neighborhood hops=${hops} (top-10 hubs)`,
      http: (i: number) => http(`/v1/ontology/graph_neighborhood?node_id=${pick(hubs, i).id}&hops=${hops}`),
      anchorName: 'same SQL via pg',
      anchor: subgraph(
        hubs.map((h) => h.id),
        hops,
        300,
        600,
      ),
    })),
    {
      name: 'family_tree degrees=2 (random)',
      http: (i) => http(`/v1/ontology/family_tree?node_id=${pick(randomIds, i)}&degrees=2`),
      anchorName: 'same SQL via pg',
      anchor: subgraph(randomIds, 2, 500, 1000),
    },
    {
      name: 'family_tree degrees=2 (top-10 hubs)',
      http: (i) => http(`/v1/ontology/family_tree?node_id=${pick(hubs, i).id}&degrees=2`),
      anchorName: 'same SQL via pg',
      anchor: subgraph(
        hubs.map((h) => h.id),
        2,
        500,
        1000,
      ),
    },
    {
      name: 'graph_stats',
      http: () => http('/v1/ontology/graph_stats'),
      anchorName: 'same SQL via pg',
      anchor: () => sql(STATS_SQL, [5]),
    },
    {
      name: 'graph_overview (type_path)',
      http: () => http('/v1/ontology/graph_overview'),
      anchorName: 'same SQL via pg',
      anchor: () => sql(OVERVIEW_SQL, [true, 500]),
      concurrency: [1],
    },
  ];

  const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
  const rows: { subject: Measurement; anchor: Measurement }[] = [];
  for (const op of ops.filter((candidate) => !only || only.split(',').some((part) => candidate.name.includes(part)))) {
    for (const concurrency of op.concurrency ?? [1, 4]) {
      // Interleaved: the subject and its anchor run back to back at the same concurrency.
      const subject = await measure(op.name, op.http, { concurrency, durationMs: seconds * 1000 });
      const anchor = await measure(op.anchorName, op.anchor, { concurrency, durationMs: seconds * 1000 });
      rows.push({ subject, anchor });
      console.error(
        `[bench] ${op.name} c=${concurrency}: ${subject.rps.toFixed(0)} req/s p95 ${subject.p95.toFixed(2)} ms | ` +
          `anchor ${anchor.rps.toFixed(0)} req/s p95 ${anchor.p95.toFixed(2)} ms`,
      );
    }
  }

  const random = rows.find((r) => r.subject.name === 'neighborhood hops=2 (random)' && r.subject.concurrency === 1)!;
  const hub = rows.find((r) => r.subject.name === 'neighborhood hops=2 (top-10 hubs)' && r.subject.concurrency === 1)!;
  console.log(
    `\nData: ${nodeCount} nodes, ${counts!.edges} live edges; top hub degree ${hubs[0]?.degree}; ` +
      `${seconds} s per point, 2-core machine.\n`,
  );
  console.log(markdownTable(rows));
  if (only) return stop();
  console.log(
    `\n- p95 difference (ours − same SQL) per traversal row: ${rows
      .filter((r) => /neighborhood|family_tree/.test(r.subject.name))
      .map((r) => `${r.subject.name} c=${r.subject.concurrency}: ${(r.subject.p95 - r.anchor.p95).toFixed(2)} ms`)
      .join('; ')}`,
  );
  console.log(`- hub p99 / random p99 (hops=2, 1 client): ${(hub.subject.p99 / random.subject.p99).toFixed(2)}`);
  console.log(
    `- graph_stats cold (first call after start): HTTP ${statsColdMs.toFixed(0)} ms; ` +
      `its SQL through pg, first call: ${statsSqlColdMs.toFixed(0)} ms`,
  );

  await stop();

  async function stop() {
    await new Promise<void>((resolve) => api.server.close(() => resolve()));
    await new Promise<void>((resolve) => bareServer.server.close(() => resolve()));
    await appPool.end();
    await rawPool.end();
    await service.stop();
  }
}
