import { expect } from 'chai';
import { DegreeBackfill1763780008200 } from '../migrations/1763780008200-degree-backfill';
import { sleep } from './helpers/eventually';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

const NODES = '/v1/ontology/nodes';
const EDGES = '/v1/ontology/edges';

type Client = ReturnType<typeof as>;

async function node(client: Client, type: string, name: string, extra: Record<string, unknown> = {}): Promise<string> {
  const response = await client.post(NODES, { type, name, ...extra });
  expect(response.status).to.equal(201);
  return response.body.id;
}
async function edge(client: Client, source: string, target: string, type = 'r'): Promise<string> {
  const response = await client.post(EDGES, { type, source_node_id: source, target_node_id: target });
  expect(response.status).to.equal(201);
  return response.body.id;
}
const ids = (items: { id: string }[]) => items.map((item) => item.id).sort();

describe('graph: traversals', () => {
  // A chain c - a1 - a2 - a3 - a4 (alternating directions), a side branch c <- b1, and an
  // unconnected node: the hop bounds, both directions and the edges-in-set rule are all visible.
  let client: Client;
  let c: string, a1: string, a2: string, a3: string, a4: string, b1: string, lone: string;
  let e1: string, e2: string, e3: string, eb: string, chord: string;
  before(async () => {
    client = as((await newTenant()).api_key);
    c = await node(client, 'person', 'Centre Person');
    a1 = await node(client, 'project', 'src/app/one');
    a2 = await node(client, 'project', 'src/app/two');
    a3 = await node(client, 'project', 'lib/three');
    a4 = await node(client, 'document', 'four');
    b1 = await node(client, 'person', 'Bea');
    lone = await node(client, 'note', 'lonely');
    e1 = await edge(client, c, a1);
    e2 = await edge(client, a2, a1);
    e3 = await edge(client, a2, a3);
    await edge(client, a4, a3);
    eb = await edge(client, b1, c, 'KNOWS');
    chord = await edge(client, b1, a1);
  });

  describe('GET /v1/ontology/graph_neighborhood', () => {
    it('walks both directions up to hops and returns every live edge inside the set', async () => {
      const one = await client.get(`/v1/ontology/graph_neighborhood?node_id=${c}&hops=1`);
      expect(one.status).to.equal(200);
      expect(one.body.center_node_id).to.equal(c);
      expect(ids(one.body.nodes)).to.deep.equal([c, a1, b1].sort());
      expect(ids(one.body.edges)).to.deep.equal([e1, eb, chord].sort());
      expect(one.body.nodes.find((n: { id: string }) => n.id === c).depth).to.equal(0);
      expect(one.body.candidates).to.deep.equal([]);

      const two = await client.get(`/v1/ontology/graph_neighborhood?node_id=${c}`);
      expect(ids(two.body.nodes)).to.deep.equal([c, a1, b1, a2].sort());
      expect(two.body.nodes.find((n: { id: string }) => n.id === a2).depth).to.equal(2);
      const three = await client.get(`/v1/ontology/graph_neighborhood?node_id=${c}&hops=3`);
      expect(ids(three.body.nodes)).to.deep.equal([c, a1, b1, a2, a3].sort());
      expect(ids(three.body.edges)).to.deep.equal([e1, eb, chord, e2, e3].sort());
      expect(three.body.truncated).to.deep.equal({ nodes: false, edges: false });
    });

    it('with q, centres on the best name match and lists up to 10 candidates', async () => {
      const response = await client.get('/v1/ontology/graph_neighborhood?q=src/app&hops=1');
      expect(response.status).to.equal(200);
      expect(response.body.candidates.map((n: { id: string }) => n.id)).to.have.members([a1, a2]);
      expect(response.body.center_node_id).to.equal(response.body.candidates[0].id);
      const exact = await client.get('/v1/ontology/graph_neighborhood?q=centre%20person&hops=1');
      expect(exact.body.center_node_id).to.equal(c);
      const none = await client.get('/v1/ontology/graph_neighborhood?q=zzzz');
      expect(none.status).to.equal(200);
      expect(none.body).to.deep.include({ center_node_id: null, nodes: [], edges: [], candidates: [] });
    });

    it('honours node_limit and edge_limit (centre counted) and says when it cut', async () => {
      const own = as((await newTenant()).api_key);
      const hub = await node(own, 'person', 'hub');
      for (let i = 0; i < 14; i++) await edge(own, hub, await node(own, 'note', `leaf ${i}`));
      const cut = await own.get(`/v1/ontology/graph_neighborhood?node_id=${hub}&hops=1&node_limit=10&edge_limit=10`);
      expect(cut.body.nodes).to.have.length(10);
      expect(cut.body.edges).to.have.length(9);
      expect(cut.body.truncated.nodes).to.equal(true);
      const edgesCut = await own.get(`/v1/ontology/family_tree?node_id=${hub}&degrees=1&edge_limit=10`);
      expect(edgesCut.body.nodes).to.have.length(15);
      expect(edgesCut.body.edges).to.have.length(10);
      expect(edgesCut.body.truncated).to.deep.equal({ nodes: false, edges: true });
    });

    it('validates its query (422) and 404s an unknown or deleted centre', async () => {
      for (const query of [
        '',
        `node_id=${c}&q=x`,
        `node_id=${c}&hops=0`,
        `node_id=${c}&hops=4`,
        `node_id=${c}&node_limit=9`,
        `node_id=${c}&node_limit=2001`,
        `node_id=${c}&edge_limit=9`,
        `node_id=${c}&edge_limit=5001`,
        `q=${'a'.repeat(201)}`,
        'node_id=nope',
      ]) {
        const response = await client.get(`/v1/ontology/graph_neighborhood?${query}`);
        expect(response.status, query).to.equal(422);
        expect(response.body.detail[0].loc[0]).to.equal('query');
      }
      expect(
        (await client.get(`/v1/ontology/graph_neighborhood?node_id=${c}&hops=3&node_limit=2000&edge_limit=5000`))
          .status,
      ).to.equal(200);
      expect(
        (await client.get('/v1/ontology/graph_neighborhood?node_id=6f1c1f0e-3a55-4c55-9a2a-0f8f3c1d2e4b')).status,
      ).to.equal(404);
    });
  });

  describe('GET /v1/ontology/family_tree', () => {
    it('returns every node within degrees hops and every live edge with both ends in the set', async () => {
      const response = await client.get(`/v1/ontology/family_tree?node_id=${a1}&degrees=1`);
      expect(response.status).to.equal(200);
      expect(ids(response.body.nodes)).to.deep.equal([a1, c, a2, b1].sort());
      // c <- b1 is not incident to a1 but both ends are in the set.
      expect(ids(response.body.edges)).to.deep.equal([e1, e2, chord, eb].sort());
      const all = await client.get(`/v1/ontology/family_tree?node_id=${c}&degrees=5`);
      expect(ids(all.body.nodes)).to.deep.equal([c, a1, a2, a3, a4, b1].sort());
      expect(all.body.edges).to.have.length(6);
    });

    it('skips deleted edges, validates degrees 1..5 and the limits (422), requires node_id', async () => {
      const own = as((await newTenant()).api_key);
      const x = await node(own, 'note', 'x');
      const y = await node(own, 'note', 'y');
      const xy = await edge(own, x, y);
      await own.delete(`${EDGES}/${xy}`);
      expect(ids((await own.get(`/v1/ontology/family_tree?node_id=${x}`)).body.nodes)).to.deep.equal([x]);
      for (const query of [
        '',
        `node_id=${x}&degrees=0`,
        `node_id=${x}&degrees=6`,
        `node_id=${x}&node_limit=9`,
        `node_id=${x}&node_limit=5001`,
        `node_id=${x}&edge_limit=9`,
        `node_id=${x}&edge_limit=10001`,
      ]) {
        expect((await own.get(`/v1/ontology/family_tree?${query}`)).status, query).to.equal(422);
      }
      expect(
        (await own.get(`/v1/ontology/family_tree?node_id=${x}&degrees=5&node_limit=5000&edge_limit=10000`)).status,
      ).to.equal(200);
    });
  });

  describe('GET /v1/ontology/graph_stats', () => {
    it('live-row totals, distributions, connections with _manual, hubs, degrees, connectivity, density', async () => {
      const response = await client.get('/v1/ontology/graph_stats?top_hubs_limit=2');
      expect(response.status).to.equal(200);
      const stats = response.body;
      expect(stats.totals).to.deep.equal({ nodes: 7, edges: 6, node_types: 4, edge_types: 2 });
      expect(stats.nodes_by_type).to.deep.equal([
        { type: 'project', count: 3 },
        { type: 'person', count: 2 },
        { type: 'document', count: 1 },
        { type: 'note', count: 1 },
      ]);
      expect(stats.edges_by_type).to.deep.equal([
        { type: 'r', count: 5 },
        { type: 'KNOWS', count: 1 },
      ]);
      expect(stats.by_connection).to.deep.equal([{ connection_id: '_manual', nodes: 7, edges: 6 }]);
      expect(stats.top_hubs.map((h: { id: string; degree: number }) => [h.id, h.degree])).to.deep.equal([
        [a1, 3],
        ...[c, a2, a3, b1]
          .sort()
          .slice(0, 1)
          .map((id) => [id, 2]),
      ]);
      expect(stats.degree_distribution).to.deep.equal([
        { min_degree: 0, max_degree: 0, nodes: 1 },
        { min_degree: 1, max_degree: 1, nodes: 1 },
        { min_degree: 2, max_degree: 3, nodes: 5 },
      ]);
      expect(stats.connectivity).to.deep.include({
        components: 2,
        largest_component: 6,
        isolated_nodes: 1,
        exact: true,
      });
      expect(stats.density).to.be.closeTo(6 / (7 * 6), 1e-12);
      expect(lone).to.be.a('string');
    });

    it('counts per connection and drops deleted rows; validates top_hubs_limit 1..50', async () => {
      const own = as((await newTenant()).api_key);
      const connection = '11111111-2222-4333-8444-555555555555';
      const x = await node(own, 'doc', 'x', { connection_id: connection });
      const y = await node(own, 'doc', 'y', { connection_id: connection });
      const z = await node(own, 'doc', 'z');
      await edge(own, x, y);
      await edge(own, z, x);
      await own.delete(`${NODES}/${y}`);
      const stats = (await own.get('/v1/ontology/graph_stats')).body;
      expect(stats.totals).to.deep.include({ nodes: 2, edges: 1 });
      expect(stats.by_connection).to.deep.equal([
        { connection_id: '_manual', nodes: 1, edges: 1 },
        { connection_id: connection, nodes: 1, edges: 0 },
      ]);
      expect(stats.connectivity).to.deep.include({ components: 1, largest_component: 2, isolated_nodes: 0 });
      for (const query of ['top_hubs_limit=0', 'top_hubs_limit=51'])
        expect((await own.get(`/v1/ontology/graph_stats?${query}`)).status).to.equal(422);
      expect((await own.get('/v1/ontology/graph_stats?top_hubs_limit=50')).status).to.equal(200);
      const empty = (await as((await newTenant()).api_key).get('/v1/ontology/graph_stats')).body;
      expect(empty.totals).to.deep.equal({ nodes: 0, edges: 0, node_types: 0, edge_types: 0 });
      expect(empty.by_connection).to.deep.equal([{ connection_id: '_manual', nodes: 0, edges: 0 }]);
      expect(empty.density).to.equal(0);
    });
  });

  describe('graph_stats connectivity', () => {
    it('reuses the connected components while the graph stands still, and says how old they are', async () => {
      const own = as((await newTenant()).api_key);
      const [x, y, z] = [await node(own, 'doc', 'x'), await node(own, 'doc', 'y'), await node(own, 'doc', 'z')];
      await edge(own, x, y);
      const connectivity = async () => (await own.get('/v1/ontology/graph_stats')).body.connectivity;

      const first = await connectivity();
      expect(first).to.include({ components: 2, largest_component: 2, exact: true });
      expect(Date.parse(first.computed_at)).to.be.closeTo(Date.now(), 5000);
      expect(first.age_seconds).to.be.at.least(0).and.below(5);
      await sleep(50);
      const second = await connectivity();
      // Not computed again: the same result, now older.
      expect(second.computed_at).to.equal(first.computed_at);
      expect(second.age_seconds).to.be.at.least(first.age_seconds + 0.05);

      // A change to the live totals is seen at once.
      await edge(own, y, z);
      const third = await connectivity();
      expect(third).to.include({ components: 1, largest_component: 3 });
      expect(third.computed_at).to.not.equal(first.computed_at);
    });
  });

  describe('degree counters', () => {
    it('a migration backfills them for rows written before the counters existed', async () => {
      const tenant = await newTenant();
      const own = as(tenant.api_key);
      const [x, y, z] = [await node(own, 'doc', 'x'), await node(own, 'doc', 'y'), await node(own, 'doc', 'z')];
      await edge(own, x, y);
      await edge(own, x, z);
      const gone = await edge(own, z, y);
      await own.delete(`${EDGES}/${gone}`);
      const owner = getStack().ownerDataSource;
      // As rows look when the counter columns arrive on a table that already has them.
      await owner.query(`UPDATE nodes SET out_degree = 0, in_degree = 0 WHERE workspace_id = $1`, [
        tenant.workspace_id,
      ]);
      // In a transaction of its own, as the migration runner gives each migration.
      await owner.transaction(async (m) => {
        if (!m.queryRunner) throw new Error('a transaction runs on a query runner');
        await new DegreeBackfill1763780008200().up(m.queryRunner);
      });
      const hubs = (await own.get('/v1/ontology/graph_stats')).body.top_hubs;
      expect(
        hubs.map((h: { id: string; in_degree: number; out_degree: number }) => [h.id, h.out_degree, h.in_degree]),
      ).to.deep.include.members([
        [x, 2, 0],
        [y, 0, 1],
        [z, 0, 1],
      ]);
    });

    it('graph_stats stays 200 and counts no negative degree when a counter has gone wrong', async () => {
      const tenant = await newTenant();
      const own = as(tenant.api_key);
      const [x, y] = [await node(own, 'doc', 'x'), await node(own, 'doc', 'y')];
      await edge(own, x, y);
      await getStack().ownerDataSource.query(`UPDATE nodes SET out_degree = -5 WHERE id = $1`, [x]);
      const response = await own.get('/v1/ontology/graph_stats');
      expect(response.status).to.equal(200);
      expect(response.body.totals).to.deep.include({ nodes: 2 });
      for (const bucket of response.body.degree_distribution) expect(bucket.min_degree).to.be.at.least(0);
      for (const hub of response.body.top_hubs) expect(hub.out_degree).to.be.at.least(0);
    });
  });

  describe('GET /v1/ontology/graph_overview', () => {
    it('groups by type, or by type and first path segment, with the edges between clusters', async () => {
      const byType = (await client.get('/v1/ontology/graph_overview?group_by=type')).body;
      expect(byType.clusters).to.deep.equal([
        { id: 'project', type: 'project', path: null, node_count: 3 },
        { id: 'person', type: 'person', path: null, node_count: 2 },
        { id: 'document', type: 'document', path: null, node_count: 1 },
        { id: 'note', type: 'note', path: null, node_count: 1 },
      ]);
      expect(byType.edges).to.deep.include({ source: 'person', target: 'project', edge_count: 2 });
      expect(byType.edges).to.deep.include({ source: 'project', target: 'project', edge_count: 2 });
      expect(byType).to.deep.include({ total_nodes: 7, total_edges: 6, truncated: false });

      const byPath = (await client.get('/v1/ontology/graph_overview')).body;
      expect(byPath.group_by).to.equal('type_path');
      expect(byPath.clusters).to.deep.include({ id: 'project/src', type: 'project', path: 'src', node_count: 2 });
      expect(byPath.clusters).to.deep.include({ id: 'project/lib', type: 'project', path: 'lib', node_count: 1 });
      expect(byPath.edges).to.deep.include({ source: 'project/src', target: 'project/src', edge_count: 1 });
    });

    it('keeps at most max_supernodes clusters, folding the rest into _other; validates 10..2000', async () => {
      const own = as((await newTenant()).api_key);
      for (let i = 0; i < 12; i++) await node(own, `kind_${String(i).padStart(2, '0')}`, `n${i}`);
      await node(own, 'kind_00', 'extra');
      const overview = (await own.get('/v1/ontology/graph_overview?group_by=type&max_supernodes=10')).body;
      expect(overview.clusters).to.have.length(10);
      expect(overview.clusters).to.deep.include({ id: 'kind_00', type: 'kind_00', path: null, node_count: 2 });
      // 12 types: the 9 biggest stay, the other 3 (one node each) fold into _other.
      expect(overview.clusters.find((cl: { id: string }) => cl.id === '_other')).to.deep.equal({
        id: '_other',
        type: null,
        path: null,
        node_count: 3,
      });
      expect(overview.truncated).to.equal(true);
      for (const query of ['max_supernodes=9', 'max_supernodes=2001', 'group_by=name']) {
        expect((await own.get(`/v1/ontology/graph_overview?${query}`)).status, query).to.equal(422);
      }
      expect((await own.get('/v1/ontology/graph_overview?max_supernodes=2000')).status).to.equal(200);
    });
  });
});
