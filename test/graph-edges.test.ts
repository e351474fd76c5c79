import { expect } from 'chai';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

const NODES = '/v1/ontology/nodes';
const EDGES = '/v1/ontology/edges';

describe('graph: edges', () => {
  it('creates an edge (201), registers its type, and counts a reference of both ends', async () => {
    const { api_key } = await newTenant();
    const a = (await as(api_key).post(NODES, { type: 'person', name: 'a' })).body;
    const b = (await as(api_key).post(NODES, { type: 'project', name: 'b' })).body;
    const created = await as(api_key).post(EDGES, {
      type: 'WORKS_ON',
      source_node_id: a.id,
      target_node_id: b.id,
      properties: { since: 2020 },
      reasoning: 'said so',
      evidence: 'line 3',
    });
    expect(created.status).to.equal(201);
    expect(created.body).to.include({
      type: 'WORKS_ON',
      source_node_id: a.id,
      target_node_id: b.id,
      reasoning: 'said so',
      evidence: 'line 3',
      is_deleted: false,
    });
    expect(created.body.properties).to.deep.equal({ since: 2020 });

    const after = (await as(api_key).get(`${NODES}/${a.id}`)).body;
    expect(after.reference_count).to.equal(1);
    expect(new Date(after.last_touch_at).getTime()).to.be.greaterThan(new Date(a.last_touch_at).getTime());
    // One reference at age 0: base_salience + 1 * boost_per_reference (0.1).
    expect(after.importance_score).to.be.closeTo(a.base_salience + 0.1, 1e-6);
    expect((await as(api_key).get(`${NODES}/${b.id}`)).body.reference_count).to.equal(1);
    expect((await as(api_key).get('/v1/ontology/types/WORKS_ON')).body).to.include({ kind: 'edge', name: 'WORKS_ON' });
    expect((await as(api_key).get(`${EDGES}/${created.body.id}`)).body).to.deep.equal(created.body);
  });

  it('404 when an end does not exist or is deleted; 422 for a bad body', async () => {
    const { api_key } = await newTenant();
    const a = (await as(api_key).post(NODES, { type: 'note', name: 'a' })).body;
    const b = (await as(api_key).post(NODES, { type: 'note', name: 'b' })).body;
    const missing = '6f1c1f0e-3a55-4c55-9a2a-0f8f3c1d2e4b';
    expect(
      (await as(api_key).post(EDGES, { type: 'r', source_node_id: a.id, target_node_id: missing })).status,
    ).to.equal(404);
    await as(api_key).delete(`${NODES}/${b.id}`);
    expect((await as(api_key).post(EDGES, { type: 'r', source_node_id: a.id, target_node_id: b.id })).status).to.equal(
      404,
    );
    // The failed attempts left no reference behind.
    expect((await as(api_key).get(`${NODES}/${a.id}`)).body.reference_count).to.equal(0);
    for (const body of [
      { type: 'r', source_node_id: a.id },
      { type: '9bad', source_node_id: a.id, target_node_id: a.id },
      { type: 'r', source_node_id: 'x', target_node_id: a.id },
    ]) {
      expect((await as(api_key).post(EDGES, body)).status, JSON.stringify(body)).to.equal(422);
    }
  });

  it('lists with source, target and type filters and soft-deletes an edge', async () => {
    const { api_key } = await newTenant();
    const [a, b, c] = await Promise.all(
      ['a', 'b', 'c'].map(async (name) => (await as(api_key).post(NODES, { type: 'note', name })).body),
    );
    const ab = (await as(api_key).post(EDGES, { type: 'knows', source_node_id: a.id, target_node_id: b.id })).body;
    const ac = (await as(api_key).post(EDGES, { type: 'cites', source_node_id: a.id, target_node_id: c.id })).body;
    const cb = (await as(api_key).post(EDGES, { type: 'knows', source_node_id: c.id, target_node_id: b.id })).body;
    const ids = async (query: string) =>
      (await as(api_key).get(`${EDGES}?${query}`)).body.map((e: { id: string }) => e.id);
    expect(await ids(`source_node_id=${a.id}`)).to.deep.equal([ab.id, ac.id]);
    expect(await ids(`target_node_id=${b.id}`)).to.deep.equal([ab.id, cb.id]);
    expect(await ids('type=knows')).to.deep.equal([ab.id, cb.id]);
    expect(await ids(`type=knows&source_node_id=${c.id}`)).to.deep.equal([cb.id]);
    expect(await ids('limit=1&offset=2')).to.deep.equal([cb.id]);
    expect(await ids('offset=2147483647')).to.deep.equal([]);
    for (const query of [
      'limit=10001',
      'offset=-1',
      'offset=2147483648',
      'type=9x',
      `type=${'a'.repeat(81)}`,
      'source_node_id=nope',
    ]) {
      expect((await as(api_key).get(`${EDGES}?${query}`)).status, query).to.equal(422);
    }
    const deleted = await as(api_key).delete(`${EDGES}/${ab.id}`);
    expect(deleted.status).to.equal(200);
    expect(deleted.body).to.include({ id: ab.id, is_deleted: true });
    expect((await as(api_key).get(`${EDGES}/${ab.id}`)).status).to.equal(404);
    expect((await as(api_key).delete(`${EDGES}/${ab.id}`)).status).to.equal(404);
    expect(await ids('type=knows')).to.deep.equal([cb.id]);
  });

  it('400 for an edge across two workspaces of the same user', async () => {
    const first = await newTenant();
    const second = await newTenant();
    // The first user also joins the second workspace.
    await getStack().ownerDataSource.query(`INSERT INTO memberships (workspace_id, user_id) VALUES ($1, $2)`, [
      second.workspace_id,
      first.user_id,
    ]);
    const here = (await as(first.api_key).post(NODES, { type: 'note', name: 'here' })).body;
    const there = (await as(second.api_key).post(NODES, { type: 'note', name: 'there' })).body;
    const response = await as(first.user_jwt).post(`${EDGES}?workspace_id=${first.workspace_id}`, {
      type: 'r',
      source_node_id: here.id,
      target_node_id: there.id,
    });
    expect(response.status).to.equal(400);
    expect(response.body.detail.error).to.equal('cross_workspace_edge');
  });

  it('404, not 400, for a workspace-bound key: it may not learn what the user’s other workspaces hold', async () => {
    const first = await newTenant();
    const second = await newTenant();
    await getStack().ownerDataSource.query(`INSERT INTO memberships (workspace_id, user_id) VALUES ($1, $2)`, [
      second.workspace_id,
      first.user_id,
    ]);
    const here = (await as(first.api_key).post(NODES, { type: 'note', name: 'here' })).body;
    const there = (await as(second.api_key).post(NODES, { type: 'note', name: 'there' })).body;
    const response = await as(first.api_key).post(EDGES, {
      type: 'r',
      source_node_id: here.id,
      target_node_id: there.id,
    });
    expect(response.status).to.equal(404);
  });

  it('takes node ids and its own workspace id in upper case', async () => {
    const { api_key, user_jwt, workspace_id } = await newTenant();
    const a = (await as(api_key).post(NODES, { type: 'note', name: 'a' })).body;
    const b = (await as(api_key).post(NODES, { type: 'note', name: 'b' })).body;
    const created = await as(api_key).post(`${EDGES}?workspace_id=${workspace_id.toUpperCase()}`, {
      type: 'r',
      source_node_id: a.id.toUpperCase(),
      target_node_id: b.id.toUpperCase(),
    });
    expect(created.status).to.equal(201);
    expect(created.body).to.include({ source_node_id: a.id, target_node_id: b.id });
    for (const token of [api_key, user_jwt]) {
      const listed = await as(token).get(`${NODES}?workspace_id=${workspace_id.toUpperCase()}`);
      expect(listed.status).to.equal(200);
      expect(listed.body).to.have.length(2);
    }
  });
});

describe('graph: workspace isolation', () => {
  it('another workspace cannot read, list, change, delete or link to these rows (404 / empty)', async () => {
    const owner = await newTenant();
    const stranger = await newTenant();
    const node = (await as(owner.api_key).post(NODES, { type: 'secret', name: 'classified' })).body;
    const other = (await as(owner.api_key).post(NODES, { type: 'secret', name: 'other' })).body;
    const edge = (await as(owner.api_key).post(EDGES, { type: 'r', source_node_id: node.id, target_node_id: other.id }))
      .body;
    const mine = (await as(stranger.api_key).post(NODES, { type: 'note', name: 'mine' })).body;
    const s = as(stranger.api_key);

    expect((await s.get(`${NODES}/${node.id}`)).status).to.equal(404);
    expect((await s.patch(`${NODES}/${node.id}`, { name: 'pwned' })).status).to.equal(404);
    expect((await s.delete(`${NODES}/${node.id}`)).status).to.equal(404);
    expect((await s.get(`${EDGES}/${edge.id}`)).status).to.equal(404);
    expect((await s.delete(`${EDGES}/${edge.id}`)).status).to.equal(404);
    expect((await s.post(EDGES, { type: 'r', source_node_id: mine.id, target_node_id: node.id })).status).to.equal(404);
    expect((await s.get(`${NODES}?type=secret`)).body).to.deep.equal([]);
    expect((await s.get(`${EDGES}?source_node_id=${node.id}`)).body).to.deep.equal([]);
    expect((await s.get('/v1/ontology/nodes/typeahead?q=classified')).body).to.deep.equal([]);
    expect((await s.delete(`${NODES}?type=secret`)).body).to.deep.include({ nodes_deleted: 0, edges_deleted: 0 });
    expect((await s.get('/v1/ontology/types/secret')).status).to.equal(404);
    expect((await s.get(`/v1/ontology/graph_neighborhood?node_id=${node.id}`)).status).to.equal(404);
    expect((await s.get(`/v1/ontology/family_tree?node_id=${node.id}`)).status).to.equal(404);
    expect((await s.get('/v1/ontology/graph_neighborhood?q=classified')).body.center_node_id).to.equal(null);
    expect((await s.get('/v1/ontology/graph_stats')).body.totals).to.deep.include({ nodes: 1, edges: 0 });
    // Asking for the owner's workspace by id is refused.
    expect((await s.get(`${NODES}?workspace_id=${owner.workspace_id}`)).status).to.equal(404);

    const still = (await as(owner.api_key).get(`${NODES}/${node.id}`)).body;
    expect(still).to.include({ name: 'classified', is_deleted: false, reference_count: 1 });
    expect((await as(owner.api_key).get(`${EDGES}/${edge.id}`)).status).to.equal(200);
  });
});
