/**
 * `npm run bench -- communities [--nodes 10000] [--groups 100] [--seconds 10]`: one community pass
 * (read the graph, Louvain, rewrite the community nodes and MEMBER_OF edges, in one transaction)
 * over a planted-partition graph — `groups` groups, each node with ~4 links inside its group and one
 * outside in ten — next to its anchors in the same run: the graph read alone (the same SQL) and
 * Louvain alone (detect.ts over the same arrays in memory). Also the cost of a skipped pass (the
 * change count only) and how well Louvain recovers the planted groups.
 */
import { detectCommunities } from '../src/communities/detect';
import { readGraph } from '../src/communities/repository';
import { LIMITS } from '../src/rules/limits';
import { markdownTable, measure, numberOption } from './lib/measure';
import { bootBenchService } from './lib/servers';

async function main(args: string[]) {
  const nodes = numberOption(args, 'nodes', 10_000);
  const groups = numberOption(args, 'groups', 100);
  const seconds = numberOption(args, 'seconds', 10);
  const service = await bootBenchService();
  const { runtime, owner, provisioning } = service;
  const name = `weft-bench-communities-${nodes}-${groups}`;
  const found = (await owner.query(`SELECT id FROM workspaces WHERE name = $1 LIMIT 1`, [name]))[0] as
    | { id: string }
    | undefined;
  const boot = await provisioning.bootstrap(found ? { workspaceId: found.id, name } : { credits: 0, name });
  const workspaceId = boot.workspace_id;
  const have = Number(
    (await owner.query(`SELECT count(*) FROM nodes WHERE workspace_id = $1`, [workspaceId]))[0].count,
  );
  if (have < nodes) {
    const t0 = Date.now();
    await owner.query(
      `INSERT INTO nodes (workspace_id, type, name, importance_score)
       SELECT $1, 'type_' || (g % 7), 'member ' || g || ' of group ' || (g % $3), random()
       FROM generate_series(0, $2 - 1) g`,
      [workspaceId, nodes, groups],
    );
    // Inside links: each node to 4 random nodes of its own group; outside links: one in ten nodes.
    await owner.query(
      `WITH n AS (SELECT id, split_part(name, ' ', 2)::int AS i FROM nodes WHERE workspace_id = $1),
            g AS (SELECT id, i % $2 AS grp, i / $2 AS pos, count(*) OVER (PARTITION BY i % $2) AS size FROM n)
       INSERT INTO edges (workspace_id, type, source_node_id, target_node_id)
       SELECT $1, 'LINKS', a.id, b.id
       FROM g a CROSS JOIN generate_series(1, 4) k
       JOIN g b ON b.grp = a.grp AND b.pos = (a.pos + k * 7) % a.size
       WHERE a.id <> b.id
       UNION ALL
       SELECT $1, 'LINKS', a.id, b.id FROM g a JOIN g b ON b.grp = (a.grp + 1) % $2 AND b.pos = a.pos
       WHERE a.pos % 10 = 0`,
      [workspaceId, groups],
    );
    await owner.query(`ANALYZE nodes; ANALYZE edges`);
    console.error(`[bench] graph built in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  const edgeCount = Number(
    (await owner.query(`SELECT count(*) FROM edges WHERE workspace_id = $1 AND type <> 'MEMBER_OF'`, [workspaceId]))[0]
      .count,
  );
  const communities = runtime.services.communities;
  const opts = { concurrency: 1, durationMs: seconds * 1000, warmupMs: 0 };

  const pass = await measure(
    'community pass (forced)',
    () => communities.refreshWorkspace(workspaceId, { force: true }),
    opts,
  );
  const read = await measure(
    'graph read alone',
    () => runtime.uow({ workspaceId }, (m) => readGraph(m, workspaceId, LIMITS.communities.maxNodes)),
    opts,
  );
  const graph = await runtime.uow({ workspaceId }, (m) => readGraph(m, workspaceId, LIMITS.communities.maxNodes));
  const louvain = await measure(
    'Louvain alone (in memory)',
    async () => detectCommunities(graph.nodes, graph.links, { minSize: 3 }),
    opts,
  );
  const skipped = await measure(
    'community pass (unchanged, skipped)',
    () => communities.refreshWorkspace(workspaceId, { force: false }),
    { ...opts, durationMs: 2000 },
  );

  // Recovery of the planted groups: the share of nodes whose community's majority group is theirs.
  const detection = detectCommunities(graph.nodes, graph.links, { minSize: 3 });
  let agreeing = 0;
  for (const community of detection.communities) {
    const counts = new Map<string, number>();
    for (const member of community.members) {
      const group = member.name.slice(member.name.lastIndexOf(' ') + 1);
      counts.set(group, (counts.get(group) ?? 0) + 1);
    }
    agreeing += Math.max(...counts.values());
  }
  const memory = process.memoryUsage();

  console.log(`## Community pass benchmark (\`npm run bench -- communities\`)`);
  console.log();
  console.log(
    `${new Date().toISOString()}: ${graph.nodes.length} nodes, ${edgeCount} edges, ${groups} planted groups; ` +
      `${detection.communities.length} communities found, modularity ${detection.modularity.toFixed(3)}, ` +
      `${((agreeing / graph.nodes.length) * 100).toFixed(1)}% of nodes in a community whose majority is their ` +
      `planted group; RSS ${(memory.rss / 2 ** 20).toFixed(0)} MB after the run. ${seconds} s per row, one client.`,
  );
  console.log();
  console.log(
    markdownTable([
      { subject: pass, anchor: read },
      { subject: pass, anchor: louvain },
      { subject: skipped, anchor: read },
    ]),
  );
  console.log();
  console.log(
    `Pass p50 ${pass.p50.toFixed(0)} ms = read ${read.p50.toFixed(0)} ms + Louvain ${louvain.p50.toFixed(0)} ms + ` +
      `writing ${(pass.p50 - read.p50 - louvain.p50).toFixed(0)} ms (by difference).`,
  );
  await service.stop();
}

export const run = main;
