/**
 * `npm run bench -- cap [--seconds 3] [--tree 10000] [--depth 6] [--nodes 2000]`
 *
 * The capability surface, each figure interleaved with its anchor in the same run:
 * - `ontology.search` through `POST /v1/cap` against `POST /v1/ontology/search` (same query, same
 *   top_k, same workspace): the p50 overhead of the layer (goal ≤ 1 ms);
 * - an idempotent replay (`agent.start_session` with a used key) against a bare authenticated GET
 *   (`GET /v1/auth/me/api-keys/scopes`: authentication and nothing else);
 * - `agent.claim_work` + `agent.release_claim` on a CONTAINS tree of 10,000 nodes 6 levels deep, at
 *   1 and 4 clients (goal p95 ≤ 10 ms at 4), against two `agent.heartbeat` calls (the same write
 *   path — transaction, key lock, idempotency row — without the claim's lock and walk).
 * Data goes into weft_bench through the owner connection (SQL), fresh each run; it is small.
 */

import { randomUUID } from 'node:crypto';
import { createApp } from '../src/app/http';
import { localEmbedding } from '../src/platform/llm/embedding/local';
import type { Measurement } from './lib/measure';
import { markdownTable, measure, numberOption, pairedOverhead } from './lib/measure';
import { bootBenchService, serveLocally } from './lib/servers';

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'omega', 'parser', 'graph', 'search', 'agent', 'claim'];

export async function run(args: string[]): Promise<void> {
  const seconds = numberOption(args, 'seconds', 3);
  const treeSize = numberOption(args, 'tree', 10_000);
  const depth = numberOption(args, 'depth', 6);
  const searchNodes = numberOption(args, 'nodes', 2000);
  const service = await bootBenchService();
  const { runtime, owner, provisioning } = service;
  // Two workspaces, so the search workspace holds only the search data and the tree only the tree.
  const searcher = await provisioning.bootstrap({ name: 'weft-bench-cap-search', credits: 100_000_000 });
  const claimer = await provisioning.bootstrap({ name: 'weft-bench-cap-claims' });

  // Search data: named nodes with their local-provider embeddings, so both searches use both halves.
  const started = Date.now();
  const names = Array.from(
    { length: searchNodes },
    (_, i) => `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} item ${i}`,
  );
  for (let offset = 0; offset < names.length; offset += 500) {
    const batch = names.slice(offset, offset + 500);
    await owner.query(
      `INSERT INTO nodes (workspace_id, type, name, importance_score, embedding)
       SELECT $1, 'concept', n.name, 0.5, n.embedding::vector
       FROM unnest($2::text[], $3::text[]) AS n(name, embedding)`,
      [searcher.workspace_id, batch, batch.map((name) => `[${localEmbedding(name).join(',')}]`)],
    );
  }

  // The CONTAINS tree: node i's parent is (i - 1) / b, with the branching b chosen so that `treeSize`
  // nodes fill exactly `depth` levels.
  let branching = 2;
  while ((branching ** depth - 1) / (branching - 1) < treeSize) branching++;
  const tree: { id: string; i: number }[] = await owner.query(
    `INSERT INTO nodes (workspace_id, type, name)
     SELECT $1, CASE WHEN i = 0 THEN 'code.repository' ELSE 'code.module' END, 'tree/' || i
     FROM generate_series(0, $2 - 1) i
     RETURNING id, (substring(name FROM 6))::int AS i`,
    [claimer.workspace_id, treeSize],
  );
  const idOf = new Map(tree.map((row) => [row.i, row.id]));
  const levelOf = (i: number) => {
    let level = 0;
    for (let n = i; n > 0; n = Math.floor((n - 1) / branching)) level++;
    return level;
  };
  await owner.query(
    `INSERT INTO edges (workspace_id, type, source_node_id, target_node_id)
     SELECT $1, 'CONTAINS', parent, child FROM unnest($2::uuid[], $3::uuid[]) AS e(parent, child)`,
    [
      claimer.workspace_id,
      tree.filter((row) => row.i > 0).map((row) => idOf.get(Math.floor((row.i - 1) / branching))),
      tree.filter((row) => row.i > 0).map((row) => row.id),
    ],
  );
  await owner.query(`ANALYZE nodes; ANALYZE edges`);
  const deepest = Math.max(...tree.map((row) => levelOf(row.i)));
  // Claim targets from the lower levels, as agents claim files and functions, not the repository.
  const targets = tree.filter((row) => levelOf(row.i) >= Math.max(2, deepest - 2)).map((row) => row.id);
  console.error(
    `[bench] loaded ${searchNodes} search nodes and a ${treeSize}-node tree ` +
      `(${deepest + 1} levels, branching ${branching}) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );

  const { server, url } = await serveLocally(createApp(runtime));
  const as = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });
  const searchHeaders = as(searcher.api_key);
  const claimHeaders = as(claimer.api_key);
  const conflicts = new Map<string, number>();
  const call = async (
    headers: Record<string, string>,
    method: string,
    path: string,
    body?: unknown,
    extra: Record<string, string> = {},
  ) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { ...headers, ...extra },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status === 409) conflicts.set(path, (conflicts.get(path) ?? 0) + 1);
    else if (response.status !== 200) throw new Error(`${path} → ${response.status} ${text.slice(0, 200)}`);
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
  const pick = <T>(list: readonly T[], i: number) => list[i % list.length]!;
  const queries = WORDS.map((word, i) => `${word} ${WORDS[(i + 3) % WORDS.length]}`);

  const replayKey = `bench-replay-${randomUUID()}`;
  await call(
    claimHeaders,
    'POST',
    '/v1/cap/agent.start_session',
    { name: 'replayed' },
    { 'Idempotency-Key': replayKey },
  );
  const sessions: string[] = [];
  for (let i = 0; i < 8; i++) {
    sessions.push(
      (await call(claimHeaders, 'POST', '/v1/cap/agent.start_session', { name: `claimer ${i}` })).body.result
        .session_id,
    );
  }
  let claims = 0;
  const claimAndRelease = async (i: number) => {
    const session = pick(sessions, i);
    const claimed = await call(claimHeaders, 'POST', '/v1/cap/agent.claim_work', {
      session_id: session,
      target_node_id: pick(targets, (i * 7919) % targets.length),
      intent: 'bench',
    });
    if (claimed.status !== 200) return;
    claims++;
    await call(claimHeaders, 'POST', '/v1/cap/agent.release_claim', { claim_id: claimed.body.result.claim_id });
  };

  type Op = {
    name: string;
    subject: (i: number) => Promise<unknown>;
    anchorName: string;
    anchor: (i: number) => Promise<unknown>;
  };
  const ops: Op[] = [
    {
      name: 'ontology.search via /v1/cap (k10)',
      subject: (i) => call(searchHeaders, 'POST', '/v1/cap/ontology.search', { query: pick(queries, i), top_k: 10 }),
      anchorName: 'POST /v1/ontology/search (k10)',
      anchor: (i) => call(searchHeaders, 'POST', '/v1/ontology/search', { q: pick(queries, i), top_k: 10 }),
    },
    {
      name: 'idempotent replay (agent.start_session)',
      subject: () =>
        call(
          claimHeaders,
          'POST',
          '/v1/cap/agent.start_session',
          { name: 'replayed' },
          { 'Idempotency-Key': replayKey },
        ),
      anchorName: 'bare authenticated GET',
      anchor: () => call(claimHeaders, 'GET', '/v1/auth/me/api-keys/scopes'),
    },
    {
      name: 'claim_work + release_claim',
      subject: claimAndRelease,
      anchorName: 'agent.heartbeat × 2',
      anchor: async (i) => {
        await call(claimHeaders, 'POST', '/v1/cap/agent.heartbeat', { session_id: pick(sessions, i) });
        await call(claimHeaders, 'POST', '/v1/cap/agent.heartbeat', { session_id: pick(sessions, i + 1) });
      },
    },
  ];

  // The overhead figures, measured request by request against their anchors.
  const searchPaired = await pairedOverhead(ops[0]!.subject, ops[0]!.anchor, seconds * 2000);
  const replayPaired = await pairedOverhead(ops[1]!.subject, ops[1]!.anchor, seconds * 2000);

  const rows: { subject: Measurement; anchor: Measurement }[] = [];
  for (const op of ops) {
    for (const concurrency of [1, 4]) {
      const subject = await measure(op.name, op.subject, { concurrency, durationMs: seconds * 1000 });
      const anchor = await measure(op.anchorName, op.anchor, { concurrency, durationMs: seconds * 1000 });
      rows.push({ subject, anchor });
      console.error(
        `[bench] ${op.name} c=${concurrency}: p50 ${subject.p50.toFixed(2)} p95 ${subject.p95.toFixed(2)} ms | ` +
          `anchor p50 ${anchor.p50.toFixed(2)} p95 ${anchor.p95.toFixed(2)} ms`,
      );
    }
  }

  const row = (name: string, concurrency: number) =>
    rows.find((r) => r.subject.name === name && r.subject.concurrency === concurrency)!;
  const search1 = row('ontology.search via /v1/cap (k10)', 1);
  const search4 = row('ontology.search via /v1/cap (k10)', 4);
  const replay1 = row('idempotent replay (agent.start_session)', 1);
  const claim4 = row('claim_work + release_claim', 4);
  console.log(
    `\nData: ${searchNodes} embedded nodes for search; a CONTAINS tree of ${treeSize} nodes, ` +
      `${deepest + 1} levels (branching ${branching}), claims on levels ${Math.max(2, deepest - 2)}–${deepest} ` +
      `(${targets.length} nodes); ${seconds} s per point.\n`,
  );
  console.log(markdownTable(rows));
  console.log('\n| goal | result |\n|---|---|');
  const overhead = (r: typeof search1) => r.subject.p50 - r.anchor.p50;
  const met = (ok: boolean) => (ok ? 'met' : '**missed**');
  console.log(
    `| ontology.search via /v1/cap: p50 overhead ≤ 1 ms | ${met(searchPaired.medianDifference <= 1)}: ` +
      `median per-request difference ${searchPaired.medianDifference.toFixed(2)} ms over ${searchPaired.pairs} ` +
      `alternating pairs (p50 ${searchPaired.subjectP50.toFixed(2)} vs ${searchPaired.anchorP50.toFixed(2)} ms); ` +
      `back-to-back runs above: ${overhead(search1).toFixed(2)} ms at 1 client, ` +
      `${overhead(search4).toFixed(2)} ms at 4 |`,
  );
  console.log(
    `| idempotent replay vs a bare authenticated GET | p50 ${replayPaired.subjectP50.toFixed(2)} vs ` +
      `${replayPaired.anchorP50.toFixed(2)} ms (median difference ${replayPaired.medianDifference.toFixed(2)} ms, ` +
      `${replayPaired.pairs} alternating pairs); back-to-back at 1 client: ` +
      `×${(replay1.subject.p50 / replay1.anchor.p50).toFixed(2)} |`,
  );
  console.log(
    `| claim_work + release_claim at 4 clients: p95 ≤ 10 ms | ${claim4.subject.p95 <= 10 ? 'met' : '**missed**'}: ` +
      `p95 ${claim4.subject.p95.toFixed(2)} ms (two heartbeats: ${claim4.anchor.p95.toFixed(2)} ms) |`,
  );
  console.log(
    `\n${claims} claims made; 409 answers over the whole run: ${JSON.stringify(Object.fromEntries(conflicts))}.`,
  );

  await new Promise<void>((resolve) => server.close(() => resolve()));
  await service.stop();
}
