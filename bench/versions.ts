/**
 * `npm run bench -- versions [--seconds 3] [--nodes 100000] [--edges 300000] [--changes 10000]`
 *
 * Issue 31: what the graph's versions cost. Builds (once, then reuses) a workspace of 100k nodes
 * and 300k power-law edges in weft_bench whose creation versions are two days old, then a day of
 * changes (`--changes` nodes renamed or re-propertied, edges deleted and added, nodes added and
 * deleted, one version each, spread over the last 24 hours). Then, at one client, each read next
 * to its current-read anchor, through HTTP and interleaved:
 * - get node as_of 12 hours ago vs get node;
 * - graph_neighborhood hops=2 as_of 12 hours ago vs the same now;
 * - the diff over the day (first page of 100) vs listing a page of 100 nodes, and the whole diff
 *   walked page by page, once;
 * - the write hot path: create node with the version trigger vs with it disabled, over HTTP and
 *   as the bare INSERT through pg, in alternating blocks (the trigger switched between blocks).
 */

import { createApp } from '../src/app/http';
import { BENCH_WORKSPACE_NAME, loadPowerLawGraph } from './lib/graph-data';
import type { Measurement } from './lib/measure';
import { markdownTable, measure, numberOption, percentile } from './lib/measure';
import { bootBenchService, serveLocally } from './lib/servers';

const WORKSPACE = `${BENCH_WORKSPACE_NAME}-versions`;

export async function run(args: string[]): Promise<void> {
  const seconds = numberOption(args, 'seconds', 3);
  const nodeCount = numberOption(args, 'nodes', 100_000);
  const edgeCount = numberOption(args, 'edges', 300_000);
  const changes = numberOption(args, 'changes', 10_000);
  const service = await bootBenchService({ queue: 'weft-bench-versions' });
  const { runtime, owner, provisioning } = service;

  const [existing]: { id: string }[] = await owner.query(
    `SELECT w.id FROM workspaces w WHERE w.name = $1
     AND (SELECT count(*) FROM nodes n WHERE n.workspace_id = w.id) >= $2 LIMIT 1`,
    [WORKSPACE, nodeCount],
  );
  let workspaceId = existing?.id;
  if (!workspaceId) {
    workspaceId = (await provisioning.bootstrap({ name: WORKSPACE })).workspace_id;
    let started = Date.now();
    console.error(`[bench] loading ${nodeCount} nodes and ${edgeCount} edges (each writes its create version)…`);
    await loadPowerLawGraph(owner, workspaceId, nodeCount, edgeCount);
    await owner.query(`UPDATE graph_versions SET changed_at = now() - interval '2 days' WHERE workspace_id = $1`, [
      workspaceId,
    ]);
    console.error(`[bench] loaded in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    started = Date.now();
    await dayOfChanges(owner, workspaceId, changes);
    console.error(`[bench] ${changes} changes written in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    await owner.query(`VACUUM ANALYZE graph_versions`);
  }
  const { api_key: apiKey } = await provisioning.bootstrap({ workspaceId, name: 'bench-client' });
  const [stats]: { versions: number; day: number; nodes: number; edges: number }[] = await owner.query(
    `SELECT (SELECT count(*)::int FROM graph_versions WHERE workspace_id = $1) AS versions,
            (SELECT count(*)::int FROM graph_versions WHERE workspace_id = $1
               AND changed_at > now() - interval '1 day') AS day,
            (SELECT count(*)::int FROM nodes WHERE workspace_id = $1 AND NOT is_deleted) AS nodes,
            (SELECT count(*)::int FROM edges WHERE workspace_id = $1 AND NOT is_deleted) AS edges`,
    [workspaceId],
  );
  const sample: { id: string }[] = await owner.query(
    `SELECT id FROM nodes WHERE workspace_id = $1 AND NOT is_deleted AND created_at < now() - interval '1 day'
     ORDER BY random() LIMIT 500`,
    [workspaceId],
  );
  const ids = sample.map((row) => row.id);
  const pick = <T>(list: T[], i: number) => list[i % list.length]!;

  const api = await serveLocally(createApp(runtime));
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const call = async (path: string, init: RequestInit = {}) => {
    const response = await fetch(`${api.url}${path}`, { headers, ...init });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${path} → ${response.status} ${text.slice(0, 200)}`);
    return text;
  };
  const halfDayAgo = encodeURIComponent(new Date(Date.now() - 12 * 3_600_000).toISOString());
  const dayAgo = encodeURIComponent(new Date(Date.now() - 24 * 3_600_000).toISOString());

  // The write path's anchor: the same route with the version triggers off.
  const triggers = async (enable: boolean) =>
    owner.query(`ALTER TABLE nodes ${enable ? 'ENABLE' : 'DISABLE'} TRIGGER nodes_version_insert`);
  const create = (i: number) =>
    call('/v1/ontology/nodes', { method: 'POST', body: JSON.stringify({ type: 'note', name: `bench write ${i}` }) });

  const rows: { subject: Measurement; anchor: Measurement }[] = [];
  const pair = async (
    name: string,
    subject: (i: number) => Promise<unknown>,
    anchorName: string,
    anchor: typeof subject,
  ) => {
    const measured = await measure(name, subject, { concurrency: 1, durationMs: seconds * 1000 });
    const anchored = await measure(anchorName, anchor, { concurrency: 1, durationMs: seconds * 1000 });
    rows.push({ subject: measured, anchor: anchored });
    console.error(
      `[bench] ${name}: ${measured.rps.toFixed(0)} req/s p95 ${measured.p95.toFixed(2)} ms | ` +
        `${anchorName} ${anchored.rps.toFixed(0)} req/s p95 ${anchored.p95.toFixed(2)} ms`,
    );
  };

  await pair(
    'get node as_of 12 h ago',
    (i) => call(`/v1/ontology/nodes/${pick(ids, i)}?as_of=${halfDayAgo}`),
    'get node (now)',
    (i) => call(`/v1/ontology/nodes/${pick(ids, i)}`),
  );
  await pair(
    'neighborhood hops=2 as_of 12 h ago',
    (i) => call(`/v1/ontology/graph_neighborhood?node_id=${pick(ids, i)}&hops=2&as_of=${halfDayAgo}`),
    'neighborhood hops=2 (now)',
    (i) => call(`/v1/ontology/graph_neighborhood?node_id=${pick(ids, i)}&hops=2`),
  );
  await pair(
    'diff over the last day (first page of 100)',
    () => call(`/v1/ontology/diff?from=${dayAgo}&limit=100`),
    'list nodes (page of 100)',
    (i) => call(`/v1/ontology/nodes?limit=100&offset=${(i * 100) % 10_000}`),
  );
  // The write path, in alternating blocks (the triggers switched between blocks, never inside one),
  // so both sides see the same drift of the machine's load: over HTTP, and the INSERT alone through pg.
  const insert = (i: number) =>
    owner.query(`INSERT INTO nodes (workspace_id, type, name) VALUES ($1, 'note', $2)`, [workspaceId, `sql ${i}`]);
  const alternate = async (name: string, operation: (i: number) => Promise<unknown>) => {
    const on: number[] = [];
    const off: number[] = [];
    let i = 0;
    for (let block = 0; block < 8; block++) {
      for (const enabled of block % 2 === 0 ? [true, false] : [false, true]) {
        await triggers(enabled);
        const end = Date.now() + (seconds * 1000) / 8;
        while (Date.now() < end) {
          const t0 = process.hrtime.bigint();
          await operation(i++);
          (enabled ? on : off).push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
      }
    }
    await triggers(true);
    const stats = (latencies: number[], label: string): Measurement => {
      const sorted = [...latencies].sort((a, b) => a - b);
      const total = sorted.reduce((sum, value) => sum + value, 0) / 1000;
      return {
        name: label,
        concurrency: 1,
        count: sorted.length,
        rps: sorted.length / total,
        p50: percentile(sorted, 50),
        p95: percentile(sorted, 95),
        p99: percentile(sorted, 99),
      };
    };
    rows.push({ subject: stats(on, `${name} (versioned)`), anchor: stats(off, `${name}, version trigger off`) });
  };
  await alternate('create node over HTTP', create);
  await alternate('INSERT INTO nodes via pg', insert);
  const writeRows = rows.slice(-2);

  // The whole diff of the day, page by page (limit 100), once.
  const walkStarted = Date.now();
  let pages = 0;
  let entries = 0;
  let cursor: string | null = null;
  do {
    const page = JSON.parse(
      await call(`/v1/ontology/diff?from=${dayAgo}&limit=100${cursor ? `&cursor=${cursor}` : ''}`),
    ) as { changes: unknown[]; next_cursor: string | null };
    pages += 1;
    entries += page.changes.length;
    cursor = page.next_cursor;
  } while (cursor);
  const walkMs = Date.now() - walkStarted;

  console.log(
    `\nData: ${stats!.nodes} live nodes, ${stats!.edges} live edges, ${stats!.versions} versions of which ` +
      `${stats!.day} in the last day; ${seconds} s per point, 1 client, loaded 2-core machine.\n`,
  );
  console.log(markdownTable(rows));
  console.log(
    `\n- the whole diff of the day: ${entries} entries in ${pages} pages of 100, ${walkMs} ms ` +
      `(${(walkMs / pages).toFixed(0)} ms a page)`,
  );
  for (const { subject, anchor } of writeRows) {
    console.log(
      `- ${subject.name}: p50 ${subject.p50.toFixed(2)} ms vs ${anchor.p50.toFixed(2)} ms without the version ` +
        `(+${(subject.p50 - anchor.p50).toFixed(2)} ms, ${(subject.p50 / anchor.p50).toFixed(2)}×)`,
    );
  }

  await new Promise<void>((resolve) => api.server.close(() => resolve()));
  await service.stop();
}

/**
 * A day of changes, one version per entity, their times spread over the last 24 hours: renames,
 * property edits, edge deletions and additions, node additions and deletions.
 */
async function dayOfChanges(owner: import('typeorm').DataSource, workspaceId: string, changes: number) {
  const share = (part: number) => Math.max(1, Math.floor(changes * part));
  await owner.transaction(async (m) => {
    const [{ mark }] = await m.query(`SELECT coalesce(max(id), 0)::bigint AS mark FROM graph_versions`);
    await m.query(
      `UPDATE nodes SET name = name || ' (renamed)', updated_at = now() WHERE id IN (
         SELECT id FROM nodes WHERE workspace_id = $1 AND NOT is_deleted ORDER BY random() LIMIT $2)`,
      [workspaceId, share(0.3)],
    );
    await m.query(
      `UPDATE nodes SET properties = properties || '{"edited": true}', updated_at = now() WHERE id IN (
         SELECT id FROM nodes WHERE workspace_id = $1 AND NOT is_deleted AND NOT name LIKE '%(renamed)'
         ORDER BY random() LIMIT $2)`,
      [workspaceId, share(0.2)],
    );
    await m.query(
      `UPDATE edges SET is_deleted = true, deleted_at = now() WHERE id IN (
         SELECT id FROM edges WHERE workspace_id = $1 AND NOT is_deleted ORDER BY random() LIMIT $2)`,
      [workspaceId, share(0.2)],
    );
    await m.query(
      `INSERT INTO nodes (workspace_id, type, name) SELECT $1, 'note', 'Added ' || g FROM generate_series(1, $2) g`,
      [workspaceId, share(0.1)],
    );
    await m.query(
      `INSERT INTO edges (workspace_id, type, source_node_id, target_node_id)
       SELECT $1, 'RELATED_TO', a.id, b.id FROM
         (SELECT id, row_number() OVER () AS r FROM (SELECT id FROM nodes WHERE workspace_id = $1 AND NOT is_deleted
            ORDER BY random() LIMIT $2) x) a
         JOIN (SELECT id, row_number() OVER () AS r FROM (SELECT id FROM nodes WHERE workspace_id = $1
            AND NOT is_deleted ORDER BY random() LIMIT $2) y) b ON a.r = b.r AND a.id <> b.id`,
      [workspaceId, share(0.15)],
    );
    await m.query(
      `WITH doomed AS (SELECT id FROM nodes WHERE workspace_id = $1 AND NOT is_deleted AND type = 'concept'
         AND out_degree + in_degree = 0 ORDER BY random() LIMIT $2)
       UPDATE nodes SET is_deleted = true, deleted_at = now(), updated_at = now() WHERE id IN (SELECT id FROM doomed)`,
      [workspaceId, share(0.05)],
    );
    await m.query(
      `UPDATE graph_versions SET changed_at = now() - random() * interval '23 hours'
       WHERE workspace_id = $1 AND id > $2`,
      [workspaceId, mark],
    );
  });
  await owner.query(`VACUUM ANALYZE nodes`);
  await owner.query(`VACUUM ANALYZE edges`);
}
