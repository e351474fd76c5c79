import { expect } from 'chai';
import { scheduleId } from '../src/app/schedules';
import { CREDIT_COSTS } from '../src/rules/costs';
import { LIMITS } from '../src/rules/limits';
import { capClient } from './helpers/cap';
import { as } from './helpers/http';
import { useOpenAIStack } from './helpers/openai-stack';
import { getStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';

const owner = () => getStack().ownerDataSource;

/** A clique of `size` people named `${prefix} 0…`, importance falling with the index; returns their ids. */
async function clique(workspaceId: string, prefix: string, size: number): Promise<string[]> {
  const rows: { id: string }[] = await owner().query(
    `INSERT INTO nodes (workspace_id, type, name, importance_score)
     SELECT $1, 'person', $2 || ' ' || g, 0.9 - g * 0.05 FROM generate_series(0, $3 - 1) g
     RETURNING id`,
    [workspaceId, prefix, size],
  );
  const ids = rows.map((row) => row.id);
  await owner().query(
    `INSERT INTO edges (workspace_id, type, source_node_id, target_node_id)
     SELECT $1, 'KNOWS', a, b FROM unnest($2::uuid[]) a, unnest($2::uuid[]) b WHERE a < b`,
    [workspaceId, ids],
  );
  return ids;
}

const link = (workspaceId: string, a: string, b: string) =>
  owner().query(`INSERT INTO edges (workspace_id, type, source_node_id, target_node_id) VALUES ($1, 'KNOWS', $2, $3)`, [
    workspaceId,
    a,
    b,
  ]);

const memberOf = async (communityId: string) =>
  (
    await owner().query(
      `SELECT source_node_id AS id FROM edges WHERE target_node_id = $1 AND type = 'MEMBER_OF' AND NOT is_deleted`,
      [communityId],
    )
  )
    .map((row: { id: string }) => row.id)
    .sort();

/** Ends the workspace's forced-refresh cooldown, as its time passing would. */
const cooledDown = (workspaceId: string) =>
  owner().query(
    `UPDATE community_forced_refreshes SET requested_at = now() - make_interval(secs => $2) WHERE workspace_id = $1`,
    [workspaceId, LIMITS.communities.forcedCooldownSeconds],
  );

describe('communities', function () {
  this.timeout(120_000);

  it('has the hourly community-refresh Temporal Schedule', async () => {
    const { runtime, config } = getStack();
    const description = await runtime.temporal.client.schedule
      .getHandle(scheduleId(config.TEMPORAL_TASK_QUEUE, { name: 'community-refresh' }))
      .describe();
    expect(description.action.type).to.equal('startWorkflow');
    expect((description.action as { workflowType: string }).workflowType).to.equal('communityRefreshWorkflow');
    expect(description.spec.intervals?.[0]?.every).to.equal(3_600_000);
  });

  it('detects communities on demand, stores them as nodes with MEMBER_OF edges, recomputes on change', async () => {
    const t = await newTenant(100);
    const other = await newTenant(100);
    const analysts = await clique(t.workspace_id, 'Analyst', 6);
    const engineers = await clique(t.workspace_id, 'Engineer', 5);
    await link(t.workspace_id, analysts[5]!, engineers[4]!);
    await owner().query(`INSERT INTO nodes (workspace_id, type, name) VALUES ($1, 'note', 'A lone note')`, [
      t.workspace_id,
    ]);

    const first = await as(t.api_key).post('/v1/ontology/communities/refresh', {});
    expect(first.status).to.equal(200);
    expect(first.body.pass).to.deep.include({ refreshed: true, reason: 'first_pass', communities: 2, nodes: 12 });
    expect(first.body.pass.modularity).to.be.greaterThan(0.3);
    const [big, small] = first.body.communities.sort((a: any, b: any) => b.size - a.size);
    expect(big.size).to.equal(6);
    expect(small.size).to.equal(5);
    expect(big.top_members.map((m: any) => m.name)).to.deep.equal([
      'Analyst 0',
      'Analyst 1',
      'Analyst 2',
      'Analyst 3',
      'Analyst 4',
    ]);
    expect(big.summary).to.equal(
      '6 members: 6 person. Most important: Analyst 0, Analyst 1, Analyst 2, Analyst 3, Analyst 4.',
    );
    // The local model's summary is the extract; nothing is left for a model to write.
    expect(big).to.deep.include({ summary_source: 'extract', summary_status: 'current', summary_error: null });
    expect(first.body.pass.summaries_pending).to.equal(0);
    expect(first.body.pass.summaries).to.equal(undefined);
    expect(big.name).to.equal('Community: Analyst 0, Analyst 1, Analyst 2');
    expect(await memberOf(big.id)).to.deep.equal([...analysts].sort());
    expect(await memberOf(small.id)).to.deep.equal([...engineers].sort());

    // A community is a node like any other, readable through the graph API, in its workspace only.
    const node = await as(t.api_key).get(`/v1/ontology/nodes/${big.id}`);
    expect(node.status).to.equal(200);
    expect(node.body).to.deep.include({ type: 'community', name: big.name });
    expect((await as(other.api_key).get('/v1/ontology/communities')).body).to.deep.equal([]);
    expect((await as(other.api_key).get(`/v1/ontology/nodes/${big.id}`)).status).to.equal(404);

    // Unforced, with fewer than the threshold's changes: skipped.
    await link(t.workspace_id, analysts[0]!, engineers[0]!);
    const skipped = await as(t.api_key).post('/v1/ontology/communities/refresh', { force: false });
    expect(skipped.status).to.equal(200);
    expect(skipped.body.pass).to.deep.include({ refreshed: false, reason: 'unchanged', changes: 1, threshold: 20 });

    // A third group (8 nodes, 28 edges) passes the threshold: the schedule's sweep recomputes, and
    // the communities that barely moved keep their nodes.
    const testers = await clique(t.workspace_id, 'Tester', 8);
    const { runtime, config } = getStack();
    const swept = await runtime.temporal.client.workflow.execute('communityRefreshWorkflow', {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowId: `test-community-refresh-${Date.now()}`,
      args: [{}],
    });
    expect(swept.failed).to.equal(0);
    const listed = await as(t.api_key).get('/v1/ontology/communities');
    expect(listed.status).to.equal(200);
    const bySize = listed.body.map((c: any) => [c.size, c.id]).sort((a: any, b: any) => b[0] - a[0]);
    expect(bySize.map((row: any) => row[0])).to.deep.equal([8, 6, 5]);
    expect(bySize[1][1]).to.equal(big.id);
    expect(bySize[2][1]).to.equal(small.id);
    expect(await memberOf(bySize[0][1])).to.deep.equal([...testers].sort());
    const again = await as(t.api_key).post('/v1/ontology/communities/refresh', { force: false });
    expect(again.body.pass).to.deep.include({ refreshed: false, reason: 'unchanged', changes: 0 });
  });

  it('graph_overview groups by community: one cluster per community, the rest in "_none"', async () => {
    const t = await newTenant(100);
    const red = await clique(t.workspace_id, 'Red', 4);
    const blue = await clique(t.workspace_id, 'Blue', 3);
    await link(t.workspace_id, red[0]!, blue[0]!);
    await owner().query(`INSERT INTO nodes (workspace_id, type, name) VALUES ($1, 'note', 'Loose')`, [t.workspace_id]);
    const refreshed = await as(t.api_key).post('/v1/ontology/communities/refresh', {});
    const ids = Object.fromEntries(refreshed.body.communities.map((c: any) => [c.size, c.id]));
    const overview = await as(t.api_key).get('/v1/ontology/graph_overview?group_by=community');
    expect(overview.status).to.equal(200);
    expect(overview.body).to.deep.include({ group_by: 'community', total_nodes: 8, truncated: false });
    expect(overview.body.clusters).to.deep.equal([
      { id: ids[4], type: 'community', path: null, name: 'Community: Red 0, Red 1, Red 2', node_count: 4 },
      { id: ids[3], type: 'community', path: null, name: 'Community: Blue 0, Blue 1, Blue 2', node_count: 3 },
      { id: '_none', type: null, path: null, name: null, node_count: 1 },
    ]);
    // 6 + 3 KNOWS edges inside, one between; MEMBER_OF edges are the grouping, not links.
    expect(overview.body.total_edges).to.equal(10);
    expect(overview.body.edges).to.deep.include({ source: ids[4], target: ids[3], edge_count: 1 });
  });

  it('answers a global question from the community summaries, citing the community nodes', async () => {
    const t = await newTenant(100);
    await clique(t.workspace_id, 'Painter', 4);
    await clique(t.workspace_id, 'Sculptor', 3);
    const question = 'What are the main groups in this graph?';
    // No communities yet: retrieval as usual, no community cited.
    const before = await as(t.api_key).post('/v1/ontology/prompt', { prompt: question, force_intent: 'query' });
    expect(before.status).to.equal(200);
    const refreshed = await as(t.api_key).post('/v1/ontology/communities/refresh', {});
    const ids = refreshed.body.communities.map((c: any) => c.id);
    expect(before.body.citations.filter((id: string) => ids.includes(id))).to.deep.equal([]);

    const answered = await as(t.api_key).post('/v1/ontology/prompt', { prompt: question, force_intent: 'query' });
    expect(answered.status).to.equal(200);
    expect([...answered.body.citations].sort()).to.deep.equal([...ids].sort());
    expect(answered.body.answer).to.contain('The main groups in the graph (2 communities)');
    expect(answered.body.answer).to.contain('4 members: 4 person. Most important: Painter 0');
    expect(answered.body.answer).to.contain('3 members: 3 person. Most important: Sculptor 0');

    const asked = await capClient(t.api_key)('ontology.ask', { question: 'Which communities are there?' });
    expect(asked.status).to.equal(200);
    expect([...asked.body.result.citations].sort()).to.deep.equal([...ids].sort());
  });

  it('a forced pass over a graph whose groups dissolved deletes the stale community nodes', async () => {
    const t = await newTenant(100);
    const ids = await clique(t.workspace_id, 'Member', 4);
    const first = await as(t.api_key).post('/v1/ontology/communities/refresh', { force: true });
    expect(first.body.pass.communities).to.equal(1);
    const communityId = first.body.communities[0].id;
    await owner().query(`UPDATE edges SET is_deleted = true, deleted_at = now() WHERE source_node_id = ANY($1)`, [ids]);
    await cooledDown(t.workspace_id);
    const second = await as(t.api_key).post('/v1/ontology/communities/refresh', { force: true });
    expect(second.body.pass).to.deep.include({ refreshed: true, reason: 'forced', communities: 0 });
    expect(second.body.communities).to.deep.equal([]);
    expect((await as(t.api_key).get(`/v1/ontology/nodes/${communityId}`)).status).to.equal(404);
    expect(await memberOf(communityId)).to.deep.equal([]);
  });

  it('charges a forced pass, one per workspace per cooldown, else 429 with Retry-After (review NL-6)', async () => {
    const price = CREDIT_COSTS['ontology.communities.refresh_forced'];
    const cooldown = LIMITS.communities.forcedCooldownSeconds;
    const t = await newTenant(100);
    await clique(t.workspace_id, 'Forced', 4);
    const refresh = (token: string, force: boolean) => as(token).post('/v1/ontology/communities/refresh', { force });
    const first = await refresh(t.api_key, true);
    expect(first.status, first.text).to.equal(200);
    expect(first.body.pass).to.deep.include({ refreshed: true, reason: 'first_pass' });
    expect(await creditBalance(t.tenant_id)).to.equal(100 - price);
    const ledger = await as(t.api_key).get('/v1/billing/ledger');
    expect(ledger.body.entries[0]).to.include({ kind: 'ontology.communities.refresh_forced', amount: -price });

    // The review's back-to-back forced passes: the second is refused before any work, and costs nothing.
    const again = await refresh(t.api_key, true);
    expect(again.status, again.text).to.equal(429);
    expect(again.body.detail).to.match(/once every 300 s/);
    const retryAfter = Number(again.headers.get('retry-after'));
    expect(retryAfter).to.be.within(1, cooldown);
    expect(await creditBalance(t.tenant_id)).to.equal(100 - price);
    // The user's JWT is the same workspace: the cooldown is the workspace's, not the credential's.
    expect((await refresh(t.user_jwt, true)).status).to.equal(429);
    // Without force the schedule's rule applies, free, whatever the cooldown.
    const unforced = await refresh(t.api_key, false);
    expect(unforced.status).to.equal(200);
    expect(unforced.body.pass).to.deep.include({ refreshed: false, reason: 'unchanged' });
    expect(await creditBalance(t.tenant_id)).to.equal(100 - price);
    // Another workspace has its own cooldown.
    const other = await newTenant(100);
    expect((await refresh(other.api_key, true)).status).to.equal(200);

    await cooledDown(t.workspace_id);
    const later = await refresh(t.api_key, true);
    expect(later.status, later.text).to.equal(200);
    expect(later.body.pass).to.deep.include({ refreshed: true, reason: 'forced' });
    expect(await creditBalance(t.tenant_id)).to.equal(100 - 2 * price);

    // Short of credits: 402 before any work, and the cooldown is not spent.
    const poor = await newTenant(price - 1);
    expect((await refresh(poor.api_key, true)).status).to.equal(402);
    const claimed = await owner().query(`SELECT 1 FROM community_forced_refreshes WHERE workspace_id = $1`, [
      poor.workspace_id,
    ]);
    expect(claimed).to.deep.equal([]);
  });

  it('answers 422 for a malformed body or query', async () => {
    const t = await newTenant(100);
    const bad = await as(t.api_key).post('/v1/ontology/communities/refresh', { force: 'yes' });
    expect(bad.status).to.equal(422);
    const limit = await as(t.api_key).get('/v1/ontology/communities?limit=0');
    expect(limit.status).to.equal(422);
  });
});

describe('communities summarised by a hosted model (fake OpenAI-compatible server)', function () {
  this.timeout(120_000);
  const openai = useOpenAIStack();
  const client = (token: string) => as(token, openai.stack.baseUrl);
  /** The community_summary requests' inputs, in order. */
  let asked: any[] = [];
  /** Answers each community_summary request with a summary naming its first member, or fails with `status`. */
  const scriptSummaries = (status?: number) => {
    openai.fake.scriptChat((schema, body) => {
      if (schema !== 'community_summary') return undefined;
      const input = JSON.parse(body.messages.at(-1).content);
      asked.push(input);
      if (status) return { status };
      return { content: JSON.stringify({ summary: `A group around ${input.members[0].name} (${input.size}).` }) };
    });
  };
  beforeEach(() => {
    asked = [];
  });
  after(() => openai.fake.scriptChat(undefined));

  it('stores the model’s summary of each changed community, keeps it when its membership is unchanged', async () => {
    const t = await newTenant(100);
    const pilots = await clique(t.workspace_id, 'Pilot', 5);
    const chefs = await clique(t.workspace_id, 'Chef', 4);
    await link(t.workspace_id, pilots[4]!, chefs[3]!);
    scriptSummaries();

    const first = await client(t.api_key).post('/v1/ontology/communities/refresh', {});
    expect(first.status).to.equal(200);
    expect(first.body.pass).to.deep.include({ communities: 2, summaries_pending: 2 });
    expect(first.body.pass.summaries).to.deep.equal({ summarised: 2, failed: 0, left: 0 });
    const bySize = (list: any[]) => [...list].sort((a, b) => b.size - a.size);
    const [pilotGroup, chefGroup] = bySize(first.body.communities);
    expect(pilotGroup).to.deep.include({
      summary: 'A group around Pilot 0 (5).',
      summary_source: 'model',
      summary_status: 'current',
      summary_error: null,
    });
    expect(chefGroup.summary).to.equal('A group around Chef 0 (4).');
    // The request carried the community's members, most important first, and its type mix.
    const pilotInput = asked.find((input) => input.members[0].name === 'Pilot 0');
    expect(pilotInput.members.map((m: any) => m.name)).to.deep.equal([
      'Pilot 0',
      'Pilot 1',
      'Pilot 2',
      'Pilot 3',
      'Pilot 4',
    ]);
    expect(pilotInput).to.deep.include({ size: 5, member_types: [{ type: 'person', count: 5 }] });
    const stored = await owner().query(`SELECT properties FROM nodes WHERE id = $1`, [pilotGroup.id]);
    expect(stored[0].properties).to.deep.include({ summary_model: 'gpt-4o-mini', summary_source: 'model' });

    // Forced again with the same membership: no model call, the summaries stay.
    asked = [];
    // `force` defaults to true: each of these is a forced pass, one per cooldown.
    await cooledDown(t.workspace_id);
    const same = await client(t.api_key).post('/v1/ontology/communities/refresh', {});
    expect(same.body.pass.summaries_pending).to.equal(0);
    expect(asked).to.deep.equal([]);
    expect(bySize(same.body.communities).map((c: any) => c.summary)).to.deep.equal([
      'A group around Pilot 0 (5).',
      'A group around Chef 0 (4).',
    ]);

    // One more chef: only the chefs' community is asked again; the model fails, the pass does not.
    const [{ id: newChef }] = await owner().query(
      `INSERT INTO nodes (workspace_id, type, name, importance_score) VALUES ($1, 'person', 'Chef New', 0.01)
       RETURNING id`,
      [t.workspace_id],
    );
    for (const chef of chefs) await link(t.workspace_id, newChef, chef);
    scriptSummaries(500);
    await cooledDown(t.workspace_id);
    const failed = await client(t.api_key).post('/v1/ontology/communities/refresh', {});
    expect(failed.status).to.equal(200);
    expect(failed.body.pass).to.deep.include({ refreshed: true, summaries_pending: 1 });
    expect(failed.body.pass.summaries).to.deep.equal({ summarised: 0, failed: 1, left: 0 });
    expect(asked.map((input) => input.size)).to.deep.equal([5]);
    const [pilotsAfter, chefsAfter] = bySize(failed.body.communities);
    expect(pilotsAfter).to.deep.include({ id: pilotGroup.id, summary_status: 'current' });
    // The previous model summary stays, marked as failed with the reason.
    expect(chefsAfter).to.deep.include({
      id: chefGroup.id,
      size: 5,
      summary: 'A group around Chef 0 (4).',
      summary_source: 'model',
      summary_status: 'failed',
      summary_error: 'model http_error',
    });

    // The next pass asks again for the one that failed (its membership unchanged since).
    asked = [];
    scriptSummaries();
    await cooledDown(t.workspace_id);
    const retried = await client(t.api_key).post('/v1/ontology/communities/refresh', {});
    expect(retried.body.pass.summaries).to.deep.equal({ summarised: 1, failed: 0, left: 0 });
    expect(asked.map((input) => input.size)).to.deep.equal([5]);
    const chefsNow = retried.body.communities.find((c: any) => c.id === chefGroup.id);
    expect(chefsNow).to.deep.include({ summary: 'A group around Chef 0 (5).', summary_status: 'current' });
  });

  it('the schedule’s sweep has the model summarise the communities its passes changed', async () => {
    const t = await newTenant(100);
    await clique(t.workspace_id, 'Sailor', 7);
    scriptSummaries();
    const { runtime, config } = openai.stack;
    const swept = await runtime.temporal.client.workflow.execute('communityRefreshWorkflow', {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowId: `test-community-refresh-openai-${Date.now()}`,
      args: [{}],
    });
    expect(swept.failed).to.equal(0);
    const listed = await client(t.api_key).get('/v1/ontology/communities');
    expect(listed.body).to.have.length(1);
    expect(listed.body[0]).to.deep.include({
      summary: 'A group around Sailor 0 (7).',
      summary_source: 'model',
      summary_status: 'current',
    });
    expect(asked.some((input) => input.members[0].name === 'Sailor 0')).to.equal(true);
  });
});
