import { expect } from 'chai';
import { BASE_SALIENCE } from '../src/importance/salience';
import { as, request } from './helpers/http';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

const NODES = '/v1/ontology/nodes';

describe('graph: nodes', () => {
  describe('POST /v1/ontology/nodes', () => {
    it('creates a node (201): type-derived salience, the type registered, node.created in the outbox', async () => {
      const { api_key, workspace_id } = await newTenant();
      const created = await as(api_key).post(NODES, {
        type: 'person',
        name: 'Ada Lovelace',
        properties: { email: 'ada@example.com' },
      });
      expect(created.status).to.equal(201);
      const node = created.body;
      expect(node).to.include({
        type: 'person',
        name: 'Ada Lovelace',
        workspace_id,
        reference_count: 0,
        is_deleted: false,
        has_embedding: false,
        connection_id: null,
      });
      expect(node.base_salience).to.equal(BASE_SALIENCE.person);
      expect(node.importance_score).to.equal(BASE_SALIENCE.person);
      expect(node.properties).to.deep.equal({ email: 'ada@example.com' });
      expect(node).to.not.have.property('embedding');

      const types = await as(api_key).get('/v1/ontology/types');
      expect(types.body.map((t: { name: string; kind: string }) => `${t.kind}:${t.name}`)).to.include('node:person');

      const outbox = await getStack().ownerDataSource.query(
        `SELECT event_type, payload FROM outbox WHERE workspace_id = $1 AND aggregate_id = $2`,
        [workspace_id, node.id],
      );
      expect(outbox).to.deep.equal([
        { event_type: 'node.created', payload: { node_id: node.id, type: 'person', name: 'Ada Lovelace' } },
      ]);
    });

    it('uses the default salience for an unknown type and honours an explicit one', async () => {
      const { api_key } = await newTenant();
      expect((await as(api_key).post(NODES, { type: 'gizmo', name: 'g' })).body.base_salience).to.equal(0.5);
      expect(
        (await as(api_key).post(NODES, { type: 'gizmo', name: 'h', base_salience: 0.9 })).body.importance_score,
      ).to.equal(0.9);
    });

    it('rejects bad bodies with 422', async () => {
      const { api_key } = await newTenant();
      for (const body of [
        {},
        { type: 'person' },
        { type: 'Person', name: 'x' },
        { type: 'x'.repeat(81), name: 'x' },
        { type: 'p', name: '' },
        { type: 'p', name: 'x', base_salience: 2 },
      ]) {
        const response = await as(api_key).post(NODES, body);
        expect(response.status, JSON.stringify(body)).to.equal(422);
        expect(response.body.detail[0]).to.have.all.keys('loc', 'msg', 'type');
      }
    });

    it('needs a credential (401)', async () => {
      expect((await request('POST', NODES, { body: { type: 'p', name: 'x' } })).status).to.equal(401);
    });
  });

  describe('GET /v1/ontology/nodes and /nodes/{id}', () => {
    it('gets by id, with the embedding only on request, and 404 for an unknown id', async () => {
      const { api_key, workspace_id } = await newTenant();
      const node = (await as(api_key).post(NODES, { type: 'note', name: 'n1' })).body;
      const got = await as(api_key).get(`${NODES}/${node.id}`);
      expect(got.status).to.equal(200);
      expect(got.body).to.deep.include({ id: node.id, name: 'n1', type: 'note', created_at: node.created_at });
      // The embedding workflow may also write one; either way the vector appears once it is there.
      const vector = Array.from({ length: 512 }, (_, i) => (i === 0 ? 1 : 0));
      await getStack().ownerDataSource.query(`UPDATE nodes SET embedding = $2 WHERE id = $1 AND embedding IS NULL`, [
        node.id,
        `[${vector.join(',')}]`,
      ]);
      const withEmbedding = await as(api_key).get(
        `${NODES}/${node.id}?include_embedding=true&workspace_id=${workspace_id}`,
      );
      expect(withEmbedding.body.has_embedding).to.equal(true);
      expect(withEmbedding.body.embedding).to.have.length(512);
      expect(withEmbedding.body.embedding.every((x: unknown) => typeof x === 'number')).to.equal(true);
      expect((await as(api_key).get(`${NODES}/${node.id}`)).body).to.not.have.property('embedding');
      expect((await as(api_key).get(`${NODES}/6f1c1f0e-3a55-4c55-9a2a-0f8f3c1d2e4b`)).status).to.equal(404);
      expect((await as(api_key).get(`${NODES}/not-a-uuid`)).status).to.equal(422);
    });

    it('lists with type and connection_id filters, limit and offset, oldest first', async () => {
      const { api_key } = await newTenant();
      const connection = '11111111-2222-4333-8444-555555555555';
      const made: string[] = [];
      for (let i = 0; i < 5; i++)
        made.push(
          (await as(api_key).post(NODES, { type: 'task', name: `t${i}`, connection_id: i < 2 ? connection : null }))
            .body.id,
        );
      await as(api_key).post(NODES, { type: 'note', name: 'other' });
      const all = await as(api_key).get(`${NODES}?type=task`);
      expect(all.body.map((n: { id: string }) => n.id)).to.deep.equal(made);
      expect(
        (await as(api_key).get(`${NODES}?type=task&limit=2&offset=1`)).body.map((n: { id: string }) => n.id),
      ).to.deep.equal(made.slice(1, 3));
      expect((await as(api_key).get(`${NODES}?connection_id=${connection}`)).body).to.have.length(2);
      expect((await as(api_key).get(NODES)).body).to.have.length(6);
    });

    it('validates the list limits (422): limit 1..10000, offset >= 0, type pattern and length', async () => {
      const { api_key } = await newTenant();
      expect((await as(api_key).get(`${NODES}?limit=10000`)).status).to.equal(200);
      for (const query of [
        'limit=10001',
        'limit=0',
        'offset=-1',
        'type=Bad',
        `type=${'a'.repeat(81)}`,
        'connection_id=x',
        'limit=abc',
      ]) {
        const response = await as(api_key).get(`${NODES}?${query}`);
        expect(response.status, query).to.equal(422);
        expect(response.body.detail[0].loc[0]).to.equal('query');
      }
    });

    it('bounds offset by what the database can page (422 past it, never 500)', async () => {
      const { api_key } = await newTenant();
      const past = await as(api_key).get(`${NODES}?offset=2147483648`);
      expect(past.status).to.equal(422);
      expect(past.body.detail[0].loc).to.deep.equal(['query', 'offset']);
      expect((await as(api_key).get(`${NODES}?offset=99999999999999999999`)).status).to.equal(422);
      const last = await as(api_key).get(`${NODES}?offset=2147483647`);
      expect(last.status).to.equal(200);
      expect(last.body).to.deep.equal([]);
    });
  });

  describe('PATCH /v1/ontology/nodes/{id}', () => {
    it('renames, merges properties (null removes a key), changes type, and writes node.updated', async () => {
      const { api_key, workspace_id } = await newTenant();
      const node = (await as(api_key).post(NODES, { type: 'person', name: 'Bob', properties: { a: 1, b: 2 } })).body;
      const patched = await as(api_key).patch(`${NODES}/${node.id}`, { name: 'Robert', properties: { b: null, c: 3 } });
      expect(patched.status).to.equal(200);
      expect(patched.body).to.include({ name: 'Robert', type: 'person' });
      expect(patched.body.properties).to.deep.equal({ a: 1, c: 3 });
      const retyped = await as(api_key).patch(`${NODES}/${node.id}`, { type: 'employee' });
      expect(retyped.body.type).to.equal('employee');
      expect((await as(api_key).get('/v1/ontology/types/employee')).status).to.equal(200);

      const events = await getStack().ownerDataSource.query(
        `SELECT payload FROM outbox WHERE workspace_id = $1 AND event_type = 'node.updated' ORDER BY id`,
        [workspace_id],
      );
      expect(events.map((e: { payload: unknown }) => e.payload)).to.deep.equal([
        { node_id: node.id, name_changed: true },
        { node_id: node.id, name_changed: false },
      ]);
    });

    it('422 for an empty or unknown-field body, 404 for a missing node', async () => {
      const { api_key } = await newTenant();
      const node = (await as(api_key).post(NODES, { type: 'note', name: 'x' })).body;
      expect((await as(api_key).patch(`${NODES}/${node.id}`, {})).status).to.equal(422);
      expect((await as(api_key).patch(`${NODES}/${node.id}`, { colour: 'red' })).status).to.equal(422);
      expect((await as(api_key).patch(`${NODES}/6f1c1f0e-3a55-4c55-9a2a-0f8f3c1d2e4b`, { name: 'y' })).status).to.equal(
        404,
      );
    });
  });

  describe('DELETE', () => {
    it('soft-deletes one node and its incident edges; the node reads as 404 afterwards', async () => {
      const { api_key } = await newTenant();
      const a = (await as(api_key).post(NODES, { type: 'note', name: 'a' })).body;
      const b = (await as(api_key).post(NODES, { type: 'note', name: 'b' })).body;
      const edge = (
        await as(api_key).post('/v1/ontology/edges', { type: 'links', source_node_id: a.id, target_node_id: b.id })
      ).body;
      const deleted = await as(api_key).delete(`${NODES}/${a.id}`);
      expect(deleted.status).to.equal(200);
      expect(deleted.body).to.include({ id: a.id, is_deleted: true });
      expect((await as(api_key).get(`${NODES}/${a.id}`)).status).to.equal(404);
      expect((await as(api_key).get(`/v1/ontology/edges/${edge.id}`)).status).to.equal(404);
      expect((await as(api_key).delete(`${NODES}/${a.id}`)).status).to.equal(404);
      expect((await as(api_key).get(NODES)).body.map((n: { id: string }) => n.id)).to.deep.equal([b.id]);
    });

    it('bulk-deletes by type with counts; 400 when type is missing or blank', async () => {
      const { api_key } = await newTenant();
      const t1 = (await as(api_key).post(NODES, { type: 'tmp', name: 't1' })).body;
      const t2 = (await as(api_key).post(NODES, { type: 'tmp', name: 't2' })).body;
      const keep = (await as(api_key).post(NODES, { type: 'keep', name: 'k' })).body;
      const edges = '/v1/ontology/edges';
      await as(api_key).post(edges, { type: 'r', source_node_id: t1.id, target_node_id: t2.id });
      await as(api_key).post(edges, { type: 'r', source_node_id: keep.id, target_node_id: t1.id });
      const survivor = (await as(api_key).post(edges, { type: 'r', source_node_id: keep.id, target_node_id: keep.id }))
        .body;

      expect((await as(api_key).delete(NODES)).status).to.equal(400);
      expect((await as(api_key).delete(`${NODES}?type=`)).status).to.equal(400);
      expect((await as(api_key).delete(`${NODES}?type=%20%20`)).status).to.equal(400);
      expect((await as(api_key).delete(`${NODES}?type=${'a'.repeat(81)}`)).status).to.equal(422);

      const result = await as(api_key).delete(`${NODES}?type=tmp`);
      expect(result.status).to.equal(200);
      expect(result.body).to.deep.equal({ type: 'tmp', nodes_deleted: 2, edges_deleted: 2 });
      expect((await as(api_key).get(`${NODES}?type=tmp`)).body).to.deep.equal([]);
      expect((await as(api_key).get(edges)).body.map((e: { id: string }) => e.id)).to.deep.equal([survivor.id]);
      expect((await as(api_key).delete(`${NODES}?type=tmp`)).body).to.deep.equal({
        type: 'tmp',
        nodes_deleted: 0,
        edges_deleted: 0,
      });
    });
  });

  describe('GET /v1/ontology/nodes/typeahead', () => {
    it('matches substrings case-insensitively: exact matches first, then by importance', async () => {
      const { api_key } = await newTenant();
      const post = (type: string, name: string, base_salience: number) =>
        as(api_key).post(NODES, { type, name, base_salience });
      const low = (await post('project', 'Weft graph', 0.2)).body;
      const high = (await post('project', 'The WEFT service', 0.9)).body;
      const exact = (await post('project', 'weft', 0.1)).body;
      await post('project', 'unrelated', 1);
      const other = (await post('person', 'Weft Person', 0.95)).body;
      const response = await as(api_key).get('/v1/ontology/nodes/typeahead?q=Weft&type=project');
      expect(response.status).to.equal(200);
      expect(response.body.map((n: { id: string }) => n.id)).to.deep.equal([exact.id, high.id, low.id]);
      const anyType = await as(api_key).get('/v1/ontology/nodes/typeahead?q=weft&limit=2');
      expect(anyType.body.map((n: { id: string }) => n.id)).to.deep.equal([exact.id, other.id]);
      // LIKE wildcards in q are literal characters.
      expect((await as(api_key).get('/v1/ontology/nodes/typeahead?q=%25')).body).to.deep.equal([]);
      // Without q: the first nodes of the type.
      const first = await as(api_key).get('/v1/ontology/nodes/typeahead?type=project&limit=2');
      expect(first.body.map((n: { id: string }) => n.id)).to.deep.equal([low.id, high.id]);
    });

    it('costs no credits and validates limit 1..50 and q <= 200 (422)', async () => {
      const { api_key, tenant_id } = await newTenant(5);
      await as(api_key).post(NODES, { type: 'note', name: 'abc' });
      expect((await as(api_key).get('/v1/ontology/nodes/typeahead?q=abc&limit=50')).status).to.equal(200);
      const [{ credit_balance }] = await getStack().ownerDataSource.query(
        `SELECT credit_balance FROM tenants WHERE id = $1`,
        [tenant_id],
      );
      expect(Number(credit_balance)).to.equal(5);
      for (const query of ['limit=0', 'limit=51', `q=${'a'.repeat(201)}`, 'type=NotValid']) {
        expect((await as(api_key).get(`/v1/ontology/nodes/typeahead?${query}`)).status, query).to.equal(422);
      }
      expect((await as(api_key).get(`/v1/ontology/nodes/typeahead?q=${'a'.repeat(200)}`)).status).to.equal(200);
    });
  });

  it('documents every graph route in the OpenAPI document', async () => {
    const document = await request('GET', '/v1/openapi.json');
    expect(document.status).to.equal(200);
    expect(Object.keys(document.body.paths)).to.include.members([
      '/v1/ontology/nodes',
      '/v1/ontology/nodes/typeahead',
      '/v1/ontology/nodes/{node_id}',
      '/v1/ontology/edges',
      '/v1/ontology/edges/{edge_id}',
      '/v1/ontology/types',
      '/v1/ontology/types/{name}',
      '/v1/ontology/graph_overview',
      '/v1/ontology/graph_stats',
      '/v1/ontology/graph_neighborhood',
      '/v1/ontology/family_tree',
    ]);
  });
});
