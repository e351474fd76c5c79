import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { graphVersionRetentionWorkflow } from '../src/graph/workflow';
import { eventually, sleep } from './helpers/eventually';
import { as } from './helpers/http';
import { succeeded } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

const NODES = '/v1/ontology/nodes';
const EDGES = '/v1/ontology/edges';
const owner = () => getStack().ownerDataSource;

/** An instant strictly between what happened before and what happens after it. */
async function instant(): Promise<string> {
  await sleep(5);
  const at = new Date().toISOString();
  await sleep(5);
  return at;
}

const versionsOf = async (token: string, nodeId: string, query = '') => {
  const response = await as(token).get(`${NODES}/${nodeId}/history${query}`);
  expect(response.status, response.text).to.equal(200);
  return response.body;
};

/** The fields a node's version keeps; the embedding, importance and counts are not versioned. */
const versioned = (node: Record<string, unknown>) => {
  const { has_embedding: _e, importance_score: _i, reference_count: _r, last_touch_at: _t, ...rest } = node;
  return rest;
};

describe('graph versions, as_of, diff and retention (issue 31)', function () {
  this.timeout(60_000);

  it('create, update and soft delete each write a version: who, which credential, the changed fields', async () => {
    const t = await newTenant();
    const created = await as(t.api_key).post(NODES, { type: 'person', name: 'Ada', properties: { a: 1, b: 2 } });
    const id = created.body.id;
    // A reference (importance, counts) is not a version.
    const other = (await as(t.api_key).post(NODES, { type: 'person', name: 'Bob' })).body;
    await as(t.api_key).post(EDGES, { type: 'KNOWS', source_node_id: id, target_node_id: other.id });
    await as(t.user_jwt).patch(`${NODES}/${id}`, { name: 'Ada Lovelace', properties: { b: null, c: 3 } });
    await as(t.api_key).delete(`${NODES}/${id}`);

    const history = await versionsOf(t.api_key, id);
    expect(history.versions.map((v: any) => v.operation)).to.deep.equal(['delete', 'update', 'create']);
    const [deleted, updated, create] = history.versions;
    expect(create.after).to.include({ type: 'person', name: 'Ada', is_deleted: false });
    expect(create.before).to.equal(null);
    expect(create.actor).to.include({ user_id: t.user_id, credential_kind: 'api_key' });
    expect(create.actor.credential_id).to.be.a('string');
    expect(updated.actor).to.include({ user_id: t.user_id, credential_kind: 'user_jwt' });
    expect(Object.keys(updated.before).sort()).to.deep.equal(['name', 'properties', 'updated_at']);
    expect(updated.before).to.include({ name: 'Ada' });
    expect(updated.after.properties).to.deep.equal({ a: 1, c: 3 });
    expect(deleted.before).to.include({ is_deleted: false });
    expect(deleted.after).to.include({ is_deleted: true });
    expect(new Date(deleted.changed_at).getTime()).to.be.at.least(new Date(create.changed_at).getTime());
    expect(Number(deleted.version_id)).to.be.greaterThan(Number(updated.version_id));

    // Paged newest first with the cursor, and the same three versions across the pages.
    const first = await versionsOf(t.api_key, id, '?limit=2');
    expect(first.versions).to.have.length(2);
    const second = await versionsOf(t.api_key, id, `?limit=2&cursor=${first.next_cursor}`);
    expect([...first.versions, ...second.versions].map((v: any) => v.version_id)).to.deep.equal(
      history.versions.map((v: any) => v.version_id),
    );
    expect(second.next_cursor).to.equal(null);
    expect((await as(t.api_key).get(`${NODES}/${id}/history?cursor=nonsense`)).status).to.equal(422);

    // Under RLS: another workspace sees neither the node nor its versions.
    const stranger = await newTenant();
    expect((await as(stranger.api_key).get(`${NODES}/${id}/history`)).status).to.equal(404);
    expect((await as(t.api_key).get(`${NODES}/${randomUUID()}/history`)).status).to.equal(404);
  });

  it('an as_of read equals what a read returned at that time; deleted and not-yet-created are 404', async () => {
    const t = await newTenant();
    const beforeCreation = await instant();
    const id = (await as(t.api_key).post(NODES, { type: 'note', name: 'Draft', properties: { v: 1 } })).body.id;
    const firstRead = (await as(t.api_key).get(`${NODES}/${id}`)).body;
    const afterFirst = await instant();
    await as(t.api_key).patch(`${NODES}/${id}`, { name: 'Final', type: 'memo', properties: { v: 2, w: 'x' } });
    const secondRead = (await as(t.api_key).get(`${NODES}/${id}`)).body;
    const afterSecond = await instant();
    await as(t.api_key).delete(`${NODES}/${id}`);

    const asOf = async (at: string) => as(t.api_key).get(`${NODES}/${id}?as_of=${encodeURIComponent(at)}`);
    const then = await asOf(afterFirst);
    expect(then.status, then.text).to.equal(200);
    expect(versioned(then.body)).to.deep.equal(versioned(firstRead));
    expect(versioned((await asOf(afterSecond)).body)).to.deep.equal(versioned(secondRead));
    expect((await asOf(beforeCreation)).status).to.equal(404);
    expect((await as(t.api_key).get(`${NODES}/${id}`)).status).to.equal(404);
    expect((await asOf(new Date().toISOString())).status).to.equal(404);
    expect((await as(t.api_key).get(`${NODES}/${id}?as_of=yesterday`)).status).to.equal(422);
  });

  it('graph_neighborhood and family_tree as_of walk the edges of then', async () => {
    const t = await newTenant();
    const node = async (name: string) => (await as(t.api_key).post(NODES, { type: 'person', name })).body.id;
    const [a, b, c, d] = [await node('A'), await node('B'), await node('C'), await node('D')];
    const ab = (await as(t.api_key).post(EDGES, { type: 'KNOWS', source_node_id: a, target_node_id: b })).body.id;
    await as(t.api_key).post(EDGES, { type: 'KNOWS', source_node_id: b, target_node_id: d });
    const past = await instant();
    await as(t.api_key).delete(`${EDGES}/${ab}`);
    await as(t.api_key).post(EDGES, { type: 'KNOWS', source_node_id: a, target_node_id: c });
    await as(t.api_key).patch(`${NODES}/${b}`, { name: 'B renamed' });

    const names = (body: any) => body.nodes.map((n: { name: string }) => n.name).sort();
    const now = (await as(t.api_key).get(`/v1/ontology/graph_neighborhood?node_id=${a}&hops=2`)).body;
    expect(names(now)).to.deep.equal(['A', 'C']);
    const q = `node_id=${a}&as_of=${encodeURIComponent(past)}`;
    const then = await as(t.api_key).get(`/v1/ontology/graph_neighborhood?${q}&hops=2`);
    expect(then.status, then.text).to.equal(200);
    expect(names(then.body)).to.deep.equal(['A', 'B', 'D']);
    expect(then.body.edges.map((e: { id: string }) => e.id)).to.include(ab);
    const tree = await as(t.api_key).get(`/v1/ontology/family_tree?${q}&degrees=1`);
    expect(tree.status, tree.text).to.equal(200);
    expect(names(tree.body)).to.deep.equal(['A', 'B']);
    expect(tree.body.edges).to.have.length(1);
  });

  it('the diff lists nodes and edges added, changed and removed between two instants, paged', async () => {
    const t = await newTenant();
    const keep = (await as(t.api_key).post(NODES, { type: 'person', name: 'Kept' })).body.id;
    const gone = (await as(t.api_key).post(NODES, { type: 'person', name: 'Gone' })).body.id;
    const from = await instant();
    const added = (await as(t.api_key).post(NODES, { type: 'person', name: 'New' })).body.id;
    await as(t.api_key).patch(`${NODES}/${keep}`, { name: 'Kept, renamed' });
    await as(t.api_key).delete(`${NODES}/${gone}`);
    const edge = (await as(t.api_key).post(EDGES, { type: 'KNOWS', source_node_id: keep, target_node_id: added })).body;
    const transient = (await as(t.api_key).post(NODES, { type: 'person', name: 'Brief' })).body.id;
    await as(t.api_key).delete(`${NODES}/${transient}`);
    const to = await instant();
    await as(t.api_key).patch(`${NODES}/${added}`, { name: 'Later' });

    const range = `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
    const diff = await as(t.api_key).get(`/v1/ontology/diff?${range}`);
    expect(diff.status, diff.text).to.equal(200);
    const summary = diff.body.changes.map((c: any) => [c.entity_kind, c.entity_id, c.change]);
    expect(summary).to.have.deep.members([
      ['edge', edge.id, 'added'],
      ['node', added, 'added'],
      ['node', keep, 'changed'],
      ['node', gone, 'removed'],
    ]);
    const changed = diff.body.changes.find((c: any) => c.entity_id === keep);
    expect(changed.changed_fields).to.deep.equal(['name']);
    expect(changed.before.name).to.equal('Kept');
    expect(changed.after.name).to.equal('Kept, renamed');
    // `to` bounds it: the later rename is not in it.
    expect(diff.body.changes.find((c: any) => c.entity_id === added).after.name).to.equal('New');

    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const suffix: string = cursor ? `&cursor=${cursor}` : '';
      const page = await as(t.api_key).get(`/v1/ontology/diff?${range}&limit=1${suffix}`);
      expect(page.status, page.text).to.equal(200);
      paged.push(...page.body.changes.map((c: any) => c.entity_id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(paged).to.deep.equal(diff.body.changes.map((c: any) => c.entity_id));

    // Another workspace's diff over the same instants is empty.
    const stranger = await newTenant();
    expect((await as(stranger.api_key).get(`/v1/ontology/diff?${range}`)).body.changes).to.deep.equal([]);
    expect(
      (await as(t.api_key).get(`/v1/ontology/diff?from=${encodeURIComponent(to)}&to=${encodeURIComponent(from)}`))
        .status,
    ).to.equal(422);
  });

  it('edges take valid_from and valid_to, and return them', async () => {
    const t = await newTenant();
    const a = (await as(t.api_key).post(NODES, { type: 'person', name: 'A' })).body.id;
    const b = (await as(t.api_key).post(NODES, { type: 'organization', name: 'B' })).body.id;
    const held = await as(t.api_key).post(EDGES, {
      type: 'WORKS_AT',
      source_node_id: a,
      target_node_id: b,
      valid_from: '2019-01-01T00:00:00Z',
      valid_to: '2021-06-30T00:00:00Z',
    });
    expect(held.status, held.text).to.equal(201);
    expect(held.body).to.include({ valid_from: '2019-01-01T00:00:00.000Z', valid_to: '2021-06-30T00:00:00.000Z' });
    expect((await as(t.api_key).get(`${EDGES}/${held.body.id}`)).body.valid_to).to.equal('2021-06-30T00:00:00.000Z');
    const plain = (await as(t.api_key).post(EDGES, { type: 'KNOWS', source_node_id: a, target_node_id: b })).body;
    expect(plain.valid_to).to.equal(null);
    expect(plain.valid_from).to.equal(plain.created_at);
    const backwards = await as(t.api_key).post(EDGES, {
      type: 'WORKS_AT',
      source_node_id: a,
      target_node_id: b,
      valid_from: '2022-01-01T00:00:00Z',
      valid_to: '2021-01-01T00:00:00Z',
    });
    expect(backwards.status).to.equal(422);
    expect(backwards.body.detail[0].loc).to.deep.equal(['body', 'valid_to']);
  });

  it('an update prompt that changes an employer closes the old edge’s validity instead of deleting it', async () => {
    const t = await newTenant(50);
    const first = await as(t.api_key).post('/v1/ontology/prompt', {
      prompt: 'Ada Lovelace works at Analytical Engines Ltd.',
    });
    expect(first.status, first.text).to.equal(200);
    const oldEdge = first.body.edges.find((e: { type: string }) => e.type === 'WORKS_AT');
    expect(oldEdge.valid_to).to.equal(null);
    const ada = first.body.nodes.find((n: { name: string }) => n.name === 'Ada Lovelace').id;
    const between = await instant();

    const second = await as(t.api_key).post('/v1/ontology/prompt', { prompt: 'Ada Lovelace works at Babbage Labs.' });
    expect(second.status, second.text).to.equal(200);
    const newEdge = second.body.edges.find((e: { type: string }) => e.type === 'WORKS_AT');
    expect(newEdge.target_node_id).to.not.equal(oldEdge.target_node_id);

    const edges = (await as(t.api_key).get(`${EDGES}?source_node_id=${ada}&type=WORKS_AT`)).body;
    expect(edges).to.have.length(2);
    const closed = edges.find((e: { id: string }) => e.id === oldEdge.id);
    expect(closed.is_deleted).to.equal(false);
    expect(closed.valid_to).to.be.a('string');
    expect(new Date(closed.valid_to).getTime()).to.be.greaterThan(new Date(between).getTime());
    expect(edges.find((e: { id: string }) => e.id === newEdge.id).valid_to).to.equal(null);

    // The closing is a version of the old edge, labelled and naming the prompt and its sender.
    const [version] = await owner().query(
      `SELECT operation, label, prompt_id, user_id, credential_kind, before, after FROM graph_versions
       WHERE entity_id = $1 AND operation = 'update'`,
      [oldEdge.id],
    );
    expect(version).to.deep.include({
      operation: 'update',
      label: 'contradiction',
      prompt_id: second.body.correlation_id,
      user_id: t.user_id,
      credential_kind: 'api_key',
    });
    expect(version.before).to.deep.equal({ valid_to: null });
    // The diff tells the same: the old fact changed (its validity), the new one was added.
    const diff = (await as(t.api_key).get(`/v1/ontology/diff?from=${encodeURIComponent(between)}`)).body;
    const ofEdge = (id: string) => diff.changes.find((c: any) => c.entity_id === id);
    expect(ofEdge(oldEdge.id)).to.include({ change: 'changed' });
    expect(ofEdge(oldEdge.id).changed_fields).to.deep.equal(['valid_to']);
    expect(ofEdge(newEdge.id)).to.include({ change: 'added' });
    // And the person's versions name the first prompt.
    const created = (await versionsOf(t.api_key, ada)).versions.at(-1);
    expect(created.actor).to.include({ prompt_id: first.body.correlation_id, credential_kind: 'api_key' });

    // The saga's compensation of the second prompt (as a failure after its persist runs it) opens the old fact again.
    await getStack().runtime.services.prompts.undo({
      workspaceId: t.workspace_id,
      correlationId: second.body.correlation_id,
    });
    const undone = (await as(t.api_key).get(`${EDGES}?source_node_id=${ada}&type=WORKS_AT`)).body;
    expect(undone.map((e: { id: string; valid_to: string | null }) => [e.id, e.valid_to])).to.deep.equal([
      [oldEdge.id, null],
    ]);
  });

  it('merges, capability calls and runs label their versions', async () => {
    const t = await newTenant(20);
    const person = async (name: string) =>
      (await as(t.api_key).post(NODES, { type: 'person', name, properties: { email: 'ada@example.org' } })).body.id;
    const survivor = await person('Ada Byron');
    const duplicate = await person('ada byron');
    const candidate = await eventually(async () => (await as(t.api_key).get('/v1/ontology/merges')).body[0], {
      what: 'the merge candidate',
      timeoutMs: 30_000,
    });
    const approved = await as(t.user_jwt).post(`/v1/ontology/merges/${candidate.id}/approve`, {});
    expect(approved.status, approved.text).to.equal(200);
    const mergedAway = (await versionsOf(t.api_key, duplicate)).versions[0];
    expect(mergedAway).to.deep.include({ operation: 'delete', label: 'merge' });
    expect(mergedAway.actor.user_id).to.equal(t.user_id);
    const kept = (await versionsOf(t.api_key, survivor)).versions[0];
    expect(kept.label).to.equal('merge');

    // A capability call: the tool and its Idempotency-Key.
    const target = (await as(t.api_key).post(NODES, { type: 'code.method', name: 'Parser.parse' })).body.id;
    const finding = { target_node_id: target, severity: 'low', kind: 'smell', title: 'Long method' };
    const key = `finding-${randomUUID()}`;
    const called = await as(t.api_key).post('/v1/cap/agent.record_finding', finding, { 'Idempotency-Key': key });
    expect(called.status, called.text).to.equal(200);
    const [byCap] = (await versionsOf(t.api_key, called.body.result.finding_id)).versions;
    expect(byCap.actor).to.include({
      capability: 'agent.record_finding',
      capability_call: key,
      credential_kind: 'api_key',
      run_id: null,
    });

    // A run's step: the run.
    const run = await as(t.api_key).post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'agent.record_finding', input: { ...finding, title: 'From a run' } }] },
    });
    expect(run.status, run.text).to.equal(202);
    const done = await succeeded(as(t.api_key), run.body.execution_id);
    const [byRun] = (await versionsOf(t.api_key, done.steps[0].output.finding_id)).versions;
    expect(byRun.actor).to.include({ run_id: run.body.execution_id, capability: 'agent.record_finding' });
  });

  it('as_of and diff before the retention horizon are 422 naming it; the scheduled purge drops them', async () => {
    const t = await newTenant();
    const id = (await as(t.api_key).post(NODES, { type: 'note', name: 'old' })).body.id;
    const longAgo = new Date(Date.now() - 91 * 86_400_000).toISOString();
    const refused = await as(t.api_key).get(`${NODES}/${id}?as_of=${encodeURIComponent(longAgo)}`);
    expect(refused.status).to.equal(422);
    expect(refused.body.detail[0].loc).to.deep.equal(['query', 'as_of']);
    expect(refused.body.detail[0].msg).to.match(/retention horizon \d{4}-\d{2}-\d{2}T/);
    expect((await as(t.api_key).get(`/v1/ontology/diff?from=${encodeURIComponent(longAgo)}`)).status).to.equal(422);
    const tree = await as(t.api_key).get(`/v1/ontology/family_tree?node_id=${id}&as_of=${encodeURIComponent(longAgo)}`);
    expect(tree.status).to.equal(422);
    const history = await versionsOf(t.api_key, id);
    expect(new Date(history.retention_horizon).getTime()).to.be.closeTo(Date.now() - 90 * 86_400_000, 60_000);

    // A version older than the retention is purged by the scheduled workflow; a recent one stays.
    await owner().query(
      `INSERT INTO graph_versions (workspace_id, entity_kind, entity_id, operation, changed_at, after)
       VALUES ($1, 'node', $2, 'update', now() - interval '100 days', '{}')`,
      [t.workspace_id, id],
    );
    const count = async () =>
      Number((await owner().query(`SELECT count(*) AS n FROM graph_versions WHERE entity_id = $1`, [id]))[0].n);
    expect(await count()).to.equal(2);
    const handle = await getStack().runtime.temporal.workflows.start(graphVersionRetentionWorkflow, {});
    const result = await handle.result();
    expect(result.deleted).to.be.at.least(1);
    expect(await count()).to.equal(1);
  });
});
