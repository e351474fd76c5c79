import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { toSql } from 'pgvector/pg';
import { createApp } from '../src/app/http';
import { MAINTENANCE_SCHEDULES } from '../src/app/schedules';
import { creditsReconcileWorkflow } from '../src/credits/workflow';
import { SCOPES } from '../src/platform/auth/scopes';
import { loadConfig } from '../src/platform/config';
import { localEmbedding } from '../src/platform/llm/embedding/local';
import { createOpenAIEmbeddingProvider } from '../src/platform/llm/embedding/openai';
import { recencyScore } from '../src/search/scoring';
import { createSearchService } from '../src/search/service';
import type { BootstrapResult } from '../src/tenancy/service';
import { eventually } from './helpers/eventually';
import type { FakeOpenAI } from './helpers/fake-openai';
import { startFakeOpenAI } from './helpers/fake-openai';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';

interface Fixture {
  type?: string;
  name: string;
  importance?: number;
  touchedDaysAgo?: number;
  /** false: no vector yet; a number[]: this vector; default: the local embedding of the name. */
  embedding?: false | number[];
}

/** Fixture nodes through the owner connection, so scores are controlled exactly. Returns ids by name. */
async function insertNodes(workspaceId: string, fixtures: Fixture[]): Promise<Record<string, string>> {
  const rows: { id: string; name: string }[] = await getStack().ownerDataSource.query(
    `INSERT INTO nodes (workspace_id, type, name, importance_score, last_touch_at, embedding)
     SELECT $1, f.type, f.name, f.importance, now() - make_interval(secs => f.age), f.embedding::vector
     FROM unnest($2::text[], $3::text[], $4::float8[], $5::float8[], $6::text[])
       AS f(type, name, importance, age, embedding)
     RETURNING id, name`,
    [
      workspaceId,
      fixtures.map((f) => f.type ?? 'person'),
      fixtures.map((f) => f.name),
      fixtures.map((f) => f.importance ?? 0.5),
      fixtures.map((f) => (f.touchedDaysAgo ?? 0) * 86400),
      fixtures.map((f) => (f.embedding === false ? null : toSql(f.embedding ?? localEmbedding(f.name)))),
    ],
  );
  return Object.fromEntries(rows.map((row) => [row.name, row.id]));
}

const ledgerOf = (tenantId: string) =>
  getStack().ownerDataSource.query(
    `SELECT id, kind, amount, linked_event_id FROM credit_ledger WHERE tenant_id = $1 AND workspace_id IS NOT NULL
     ORDER BY created_at, amount`,
    [tenantId],
  );

const names = (body: { results: { node: { name: string } }[] }) => body.results.map((r) => r.node.name);

describe('POST /v1/ontology/search', () => {
  let t: BootstrapResult;
  let ids: Record<string, string>;
  before(async () => {
    t = await newTenant(1000);
    ids = await insertNodes(t.workspace_id, [
      { name: 'Alice Smith', importance: 0.9, touchedDaysAgo: 0 },
      { name: 'Alice Jones', importance: 0.2, touchedDaysAgo: 14 },
      { name: 'Bob Alice Marley', importance: 0.5, touchedDaysAgo: 7 },
      { name: 'Quarterly revenue report', type: 'document', importance: 0.8, touchedDaysAgo: 1 },
      { name: 'Payment service', type: 'code.module', importance: 0.3, touchedDaysAgo: 30 },
      { name: 'Alice without vector', importance: 1, touchedDaysAgo: 0, embedding: false },
    ]);
  });

  it('vector mode ranks by cosine only, with rank-derived scores, and charges 1 credit', async () => {
    const before = await creditBalance(t.tenant_id);
    const response = await as(t.api_key).post('/v1/ontology/search', { q: 'Alice Smith', mode: 'vector', top_k: 5 });
    expect(response.status).to.equal(200);
    const { results, mode, query_plan, credit_receipt } = response.body;
    expect(mode).to.equal('vector');
    // Names sharing words with the query pass the 0.7 threshold; unrelated ones and the unembedded node do not.
    expect(names(response.body)[0]).to.equal('Alice Smith');
    expect(names(response.body)).to.not.include.members([
      'Quarterly revenue report',
      'Payment service',
      'Alice without vector',
    ]);
    const n = results.length;
    results.forEach((result: any, rank: number) => {
      expect(result.components.vector_score).to.be.closeTo(1 - rank / n, 1e-9);
      expect(result.components.structural_score).to.equal(0);
      expect(result.components.importance_multiplier).to.equal(1);
      expect(result.score).to.be.closeTo(result.components.vector_score, 1e-9);
      expect(result.components.similarity).to.be.at.least(0.7);
      expect(result.node).to.include.keys('id', 'type', 'name', 'importance_score', 'has_embedding', 'workspace_id');
      expect(result.node).to.not.have.property('embedding');
    });
    for (let i = 1; i < n; i++)
      expect(results[i - 1].components.similarity).to.be.at.least(results[i].components.similarity);
    expect(query_plan).to.deep.include({
      mode: 'vector',
      top_k: 5,
      filters: { type: [] },
      vector_weight: 1,
      structural_weight: 0,
      importance_ranking: false,
      result_count: n,
    });
    expect(credit_receipt).to.deep.include({ kind: 'ontology.search.hybrid', amount: 1 });
    expect(credit_receipt.ledger_id).to.match(/^[0-9a-f-]{36}$/);
    expect(await creditBalance(t.tenant_id)).to.equal(before - 1);
    const row = (await ledgerOf(t.tenant_id)).find((r: { id: string }) => r.id === credit_receipt.ledger_id);
    expect(row).to.include({ kind: 'ontology.search.hybrid', amount: -1 });
  });

  it('structural mode ranks by 0.5 × recency (7-day half-life) + 0.5 × importance', async () => {
    const response = await as(t.api_key).post('/v1/ontology/search', { q: 'anything', mode: 'structural', top_k: 10 });
    expect(response.status).to.equal(200);
    const byName = Object.fromEntries(response.body.results.map((r: any) => [r.node.name, r]));
    // Touched 7 days ago with importance 0.5: 0.5 × 0.5 + 0.5 × 0.5.
    expect(byName['Bob Alice Marley'].components.structural_score).to.be.closeTo(0.5, 1e-3);
    expect(byName['Alice Jones'].components.structural_score).to.be.closeTo(0.5 * 0.25 + 0.5 * 0.2, 1e-3);
    for (const result of response.body.results) {
      const expected =
        0.5 * recencyScore(new Date(result.node.last_touch_at), new Date()) + 0.5 * result.node.importance_score;
      expect(result.components.structural_score).to.be.closeTo(expected, 1e-3);
      expect(result.score).to.equal(result.components.structural_score);
      expect(result.components.vector_score).to.equal(0);
      expect(result.components.importance_multiplier).to.equal(1);
    }
    // Unembedded nodes are found structurally; the most recent and most important comes first.
    expect(names(response.body)[0]).to.equal('Alice without vector');
    const scores = response.body.results.map((r: any) => r.score);
    expect(scores).to.deep.equal([...scores].sort((a: number, b: number) => b - a));
    expect(response.body.query_plan).to.deep.include({
      mode: 'structural',
      vector_weight: 0,
      structural_weight: 1,
      result_count: 6,
    });
  });

  it('structural mode finds the best nodes exactly when neither index list holds them at first', async () => {
    const wide = await newTenant(10);
    // The 500 most recent are unimportant and the 500 most important are old (both score about 0.5),
    // so the best ten (a day old, importance 0.9: about 0.9) are in neither list until it widens.
    await insertNodes(wide.workspace_id, [
      ...Array.from({ length: 600 }, (_, i) => ({ name: `recent ${i}`, importance: 0, embedding: false as const })),
      ...Array.from({ length: 600 }, (_, i) => ({
        name: `important ${i}`,
        importance: 0.95,
        touchedDaysAgo: 60 + i / 100,
        embedding: false as const,
      })),
      ...Array.from({ length: 10 }, (_, i) => ({
        name: `best ${i}`,
        importance: 0.9,
        touchedDaysAgo: 1 + i / 100,
        embedding: false as const,
      })),
    ]);
    const response = await as(wide.api_key).post('/v1/ontology/search', { q: 'x', mode: 'structural', top_k: 10 });
    expect(response.status).to.equal(200);
    expect(names(response.body)).to.deep.equal(Array.from({ length: 10 }, (_, i) => `best ${i}`));
  });

  it('hybrid scores exactly what vector and structural modes find, also where the structural lists widen', async () => {
    const wide = await newTenant(100);
    // As above (the best ten are in neither first list), with vectors, and two types to filter by.
    await insertNodes(wide.workspace_id, [
      ...Array.from({ length: 600 }, (_, i) => ({ type: 'note', name: `recent ${i}`, importance: 0 })),
      ...Array.from({ length: 600 }, (_, i) => ({
        type: i % 2 ? 'note' : 'person',
        name: `important ${i}`,
        importance: 0.95,
        touchedDaysAgo: 60 + i / 100,
      })),
      ...Array.from({ length: 10 }, (_, i) => ({ name: `best ${i}`, importance: 0.9, touchedDaysAgo: 1 + i / 100 })),
    ]);
    for (const filters of [{}, { type: ['person', 'note'] }, { type: ['person'] }]) {
      const search = (mode: string) =>
        as(wide.api_key).post('/v1/ontology/search', { q: 'important 42', mode, top_k: 10, filters });
      const componentsIn = async (mode: string) => {
        const response = await search(mode);
        expect(response.status).to.equal(200);
        return new Map<string, any>(response.body.results.map((r: any) => [r.node.id, r.components]));
      };
      // Hybrid first: it widens the lists itself (a search starts as deep as the last one had to go).
      const hybrid = await search('hybrid');
      expect(hybrid.status).to.equal(200);
      const vector = await componentsIn('vector');
      const structural = await componentsIn('structural');
      expect(hybrid.body.query_plan.candidates).to.deep.equal({ vector: vector.size, structural: 10, keyword: null });
      expect(hybrid.body.results).to.have.length(10);
      for (const { node, components } of hybrid.body.results) {
        expect(components.vector_score, node.name).to.equal(vector.get(node.id)?.vector_score ?? 0);
        expect(components.structural_score, node.name).to.be.closeTo(
          structural.get(node.id)?.structural_score ?? 0,
          1e-4, // recency moves by about 1e-6 a second between the three searches
        );
      }
      // Structural mode's ten are the best ten, found only through the widened lists.
      expect([...structural.values()].every((c) => c.structural_score > 0.85)).to.equal(true);
    }
  });

  it('filters by type in every mode', async () => {
    for (const mode of ['vector', 'structural', 'hybrid']) {
      const response = await as(t.api_key).post('/v1/ontology/search', {
        q: 'Quarterly revenue report',
        mode,
        filters: { type: ['document', 'code.module'] },
      });
      expect(response.status).to.equal(200);
      expect(response.body.results.length, mode).to.be.greaterThan(0);
      for (const result of response.body.results) expect(['document', 'code.module']).to.include(result.node.type);
      expect(response.body.query_plan.filters).to.deep.equal({ type: ['document', 'code.module'] });
    }
  });

  it('hybrid: score = (0.6 × vector + 0.4 × structural) × importance, with each term in components', async () => {
    const response = await as(t.api_key).post('/v1/ontology/search', { q: 'Alice Smith', top_k: 10 });
    expect(response.status).to.equal(200);
    expect(response.body.mode).to.equal('hybrid');
    const { results, query_plan } = response.body;
    expect(query_plan).to.deep.include({
      mode: 'hybrid',
      vector_weight: 0.6,
      structural_weight: 0.4,
      keyword_weight: 0,
      importance_ranking: true,
      top_k: 10,
    });
    for (const r of results) {
      const c = r.components;
      expect(c.importance_multiplier).to.equal(r.node.importance_score);
      expect(c.keyword_score).to.equal(0);
      expect(r.score).to.be.closeTo((0.6 * c.vector_score + 0.4 * c.structural_score) * r.node.importance_score, 1e-9);
    }
    const ids = results.map((r: any) => r.node.id);
    expect(new Set(ids).size).to.equal(ids.length);
    const aliceSmith = results.find((r: any) => r.node.name === 'Alice Smith');
    expect(aliceSmith.components.vector_score).to.equal(1);
    expect(aliceSmith.components.structural_score).to.be.greaterThan(0);
    expect(results[0].node.name).to.equal('Alice Smith');
    const scores = results.map((r: any) => r.score);
    expect(scores).to.deep.equal([...scores].sort((a: number, b: number) => b - a));
  });

  it('the contract’s example: vector 1, structural 0.75, importance 0.5 score 0.45 by default', async () => {
    const one = await newTenant(10);
    // Touched now with importance 0.5: structural 0.5 × 1 + 0.5 × 0.5; the only vector candidate: vector 1.
    await insertNodes(one.workspace_id, [{ name: 'Ada Lovelace', importance: 0.5, touchedDaysAgo: 0 }]);
    const response = await as(one.api_key).post('/v1/ontology/search', { q: 'Ada Lovelace', mode: 'hybrid' });
    expect(response.status).to.equal(200);
    const [result] = response.body.results;
    expect(result.node.name).to.equal('Ada Lovelace');
    expect(result.components).to.deep.include({ vector_score: 1, importance_multiplier: 0.5, keyword_score: 0 });
    expect(result.components.structural_score).to.be.closeTo(0.75, 1e-5);
    expect(result.score).to.be.closeTo(0.45, 1e-5);
  });

  it('follows the workspace settings: mode, weights, importance ranking, threshold, default_top_k', async () => {
    const other = await newTenant(100);
    await insertNodes(other.workspace_id, [
      { name: 'Carol Danvers', importance: 0.5 },
      { name: 'Carol Kim', importance: 0.1, touchedDaysAgo: 3 },
      { name: 'Dana Scully', importance: 0.7, touchedDaysAgo: 2 },
      { name: 'Evan Carol', importance: 0.4, touchedDaysAgo: 1 },
    ]);
    const patched = await as(other.api_key).patch('/v1/ontology/config', {
      search: { retrieval_mode: 'vector', min_similarity_threshold: 0.99, default_top_k: 2 },
    });
    expect(patched.status).to.equal(200);
    let response = await as(other.api_key).post('/v1/ontology/search', { q: 'carol danvers' });
    expect(response.body.mode).to.equal('vector');
    expect(names(response.body)).to.deep.equal(['Carol Danvers']);

    await as(other.api_key).patch('/v1/ontology/config', {
      search: {
        retrieval_mode: 'hybrid',
        min_similarity_threshold: 0,
        vector_weight: 0.2,
        structural_weight: 0.8,
        importance_ranking: false,
      },
    });
    response = await as(other.api_key).post('/v1/ontology/search', { q: 'carol' });
    expect(response.body.results).to.have.length(2);
    expect(response.body.query_plan).to.deep.include({
      top_k: 2,
      vector_weight: 0.2,
      structural_weight: 0.8,
      importance_ranking: false,
    });
    for (const r of response.body.results) {
      expect(r.components.importance_multiplier).to.equal(1);
      expect(r.score).to.be.closeTo(0.2 * r.components.vector_score + 0.8 * r.components.structural_score, 1e-9);
    }
  });

  it('never returns another workspace’s nodes', async () => {
    const other = await newTenant(10);
    for (const mode of ['vector', 'structural', 'keyword', 'hybrid']) {
      const response = await as(other.api_key).post('/v1/ontology/search', { q: 'Alice Smith', mode });
      expect(response.status).to.equal(200);
      expect(response.body.results, mode).to.deep.equal([]);
    }
    const own = await as(t.api_key).post('/v1/ontology/search', { q: 'Alice Smith', mode: 'structural', top_k: 100 });
    expect(own.body.results.every((r: any) => r.node.workspace_id === t.workspace_id)).to.equal(true);
    expect(Object.values(ids)).to.include(own.body.results[0].node.id);
  });

  it('answers 402 with the contract body when credits are short, and charges nothing', async () => {
    const poor = await newTenant(0);
    const response = await as(poor.api_key).post('/v1/ontology/search', { q: 'Alice' });
    expect(response.status).to.equal(402);
    expect(response.body).to.deep.equal({
      detail: { error: 'insufficient_credits', required: 1, available: 0, kind: 'ontology.search.hybrid' },
    });
    expect(await ledgerOf(poor.tenant_id)).to.deep.equal([]);
  });

  it('answers 402 for a locked account', async () => {
    const locked = await newTenant(50);
    await getStack().ownerDataSource.query(`UPDATE tenants SET locked = true WHERE id = $1`, [locked.tenant_id]);
    const response = await as(locked.api_key).post('/v1/ontology/search', { q: 'Alice' });
    expect(response.status).to.equal(402);
    expect(response.body.detail).to.include({
      error: 'insufficient_credits',
      kind: 'ontology.search.hybrid',
      required: 1,
    });
    expect(await creditBalance(locked.tenant_id)).to.equal(50);
  });

  it('rejects invalid requests with 422 and charges nothing', async () => {
    const before = await creditBalance(t.tenant_id);
    for (const body of [
      {},
      { q: '' },
      { q: '   ' },
      { q: 'x'.repeat(1001) },
      { q: 'a', top_k: 0 },
      { q: 'a', top_k: 101 },
      { q: 'a', top_k: 2.5 },
      { q: 'a', mode: 'fuzzy' },
      { q: 'a', filters: { type: ['Not A Type'] } },
      { q: 'a', filters: { type: ['x'.repeat(81)] } },
      { q: 'a', filters: { type: 'person' } },
      { q: 'a', unexpected: true },
    ]) {
      const response = await as(t.api_key).post('/v1/ontology/search', body);
      expect(response.status, JSON.stringify(body).slice(0, 80)).to.equal(422);
      expect(response.body.detail[0]).to.have.all.keys('loc', 'msg', 'type');
    }
    expect(await creditBalance(t.tenant_id)).to.equal(before);
  });

  it('needs the search:read scope', async () => {
    const created = await as(t.user_jwt).post('/v1/auth/me/api-keys', {
      name: 'no search',
      scopes: ['ontology:read'],
      workspace: t.workspace_id,
    });
    expect(created.status).to.equal(201);
    const before = await creditBalance(t.tenant_id);
    expect((await as(created.body.token).post('/v1/ontology/search', { q: 'Alice' })).status).to.equal(403);
    expect((await as(created.body.token).post('/v1/ontology/nodes/search', { q: 'Alice' })).status).to.equal(403);
    expect(await creditBalance(t.tenant_id)).to.equal(before);
  });
});

describe('POST /v1/ontology/nodes/search', () => {
  let t: BootstrapResult;
  before(async () => {
    t = await newTenant(100);
    await insertNodes(t.workspace_id, [
      { name: 'Alice Smith', importance: 0.9 },
      { name: 'Alice Jones', importance: 0.2 },
      { name: 'Smithsonian Institute', type: 'organization', importance: 0.6 },
      { name: 'Payment service', type: 'code.module', importance: 0.3 },
      { name: 'Alice 100% done_ok', importance: 0.1, embedding: false },
    ]);
  });

  it('semantic: nodes by cosine similarity over the workspace threshold; 1 ontology.search.vector credit', async () => {
    const before = await creditBalance(t.tenant_id);
    const response = await as(t.api_key).post('/v1/ontology/nodes/search', {
      q: 'alice smith',
      mode: 'semantic',
      top_k: 10,
    });
    expect(response.status).to.equal(200);
    expect(response.body).to.be.an('array');
    expect(response.body[0].name).to.equal('Alice Smith');
    expect(response.body.map((n: any) => n.name)).to.not.include('Payment service');
    expect(await creditBalance(t.tenant_id)).to.equal(before - 1);
    const last = (await ledgerOf(t.tenant_id)).at(-1);
    expect(last).to.include({ kind: 'ontology.search.vector', amount: -1 });
  });

  it('keyword: every word in the name, case-insensitive, exact name first; LIKE characters are literal', async () => {
    let response = await as(t.api_key).post('/v1/ontology/nodes/search', { q: 'SMITH', mode: 'keyword' });
    expect(response.body.map((n: any) => n.name).sort()).to.deep.equal(['Alice Smith', 'Smithsonian Institute']);
    response = await as(t.api_key).post('/v1/ontology/nodes/search', { q: 'alice jones', mode: 'keyword' });
    expect(response.body.map((n: any) => n.name)).to.deep.equal(['Alice Jones']);
    response = await as(t.api_key).post('/v1/ontology/nodes/search', { q: '100%', mode: 'keyword' });
    expect(response.body.map((n: any) => n.name)).to.deep.equal(['Alice 100% done_ok']);
    response = await as(t.api_key).post('/v1/ontology/nodes/search', { q: '%', mode: 'keyword' });
    expect(response.body.map((n: any) => n.name)).to.deep.equal(['Alice 100% done_ok']);
  });

  it('hybrid (the default) fuses both lists, honours filters.type and top_k', async () => {
    let response = await as(t.api_key).post('/v1/ontology/nodes/search', { q: 'alice' });
    expect(response.status).to.equal(200);
    expect(response.body.map((n: any) => n.name)).to.include.members([
      'Alice Smith',
      'Alice Jones',
      'Alice 100% done_ok',
    ]);
    response = await as(t.api_key).post('/v1/ontology/nodes/search', { q: 'alice', top_k: 1 });
    expect(response.body).to.have.length(1);
    response = await as(t.api_key).post('/v1/ontology/nodes/search', {
      q: 'smith',
      filters: { type: ['organization'] },
    });
    expect(response.body.map((n: any) => n.name)).to.deep.equal(['Smithsonian Institute']);
  });

  it('answers 402 when credits are short, before any work, and 422 for bad input', async () => {
    const poor = await newTenant(0);
    const response = await as(poor.api_key).post('/v1/ontology/nodes/search', { q: 'alice' });
    expect(response.status).to.equal(402);
    expect(response.body).to.deep.equal({
      detail: { error: 'insufficient_credits', required: 1, available: 0, kind: 'ontology.search.vector' },
    });
    for (const body of [
      { q: '' },
      { q: 'a', mode: 'vector' },
      { q: 'a', top_k: 0 },
      { q: 'a', filters: { type: ['BAD TYPE'] } },
    ]) {
      expect((await as(t.api_key).post('/v1/ontology/nodes/search', body)).status, JSON.stringify(body)).to.equal(422);
    }
  });
});

describe('keyword search: exact identifiers and codes the embedding misses', () => {
  let t: BootstrapResult;
  let ids: Record<string, string>;
  const question = 'why did the quota check fail';
  before(async () => {
    t = await newTenant(1000);
    // Twenty recent, important decoys embedded exactly like the question: they own the vector and
    // structural lists. The targets are old, unimportant, and embedded like something else.
    ids = await insertNodes(t.workspace_id, [
      ...Array.from({ length: 20 }, (_, i) => ({
        name: `Quota incident ${i}`,
        importance: 0.9,
        embedding: localEmbedding(question),
      })),
      {
        name: 'ERR_QUOTA_7731',
        type: 'error',
        importance: 0.01,
        touchedDaysAgo: 90,
        embedding: localEmbedding('zebra'),
      },
      { name: 'parseJSONFile', type: 'code.function', importance: 0.01, touchedDaysAgo: 90, embedding: false },
      { name: 'Crème Brûlée Café', type: 'place', importance: 0.01, touchedDaysAgo: 90, embedding: false },
    ]);
    await getStack().ownerDataSource.query(
      `INSERT INTO nodes (workspace_id, type, name, properties, importance_score, last_touch_at)
       VALUES ($1, 'log_entry', 'Nightly import', $2, 0.01, now() - interval '90 days')`,
      [t.workspace_id, JSON.stringify({ detail: { lines: ['step 3 failed with HTTP_429_RETRY_AFTER'] }, count: 3 })],
    );
  });

  const search = (body: object) => as(t.api_key).post('/v1/ontology/search', { top_k: 5, ...body });

  it('an error code: missed by vector, first in keyword mode, in hybrid only with a keyword weight', async () => {
    const vector = await search({ q: 'ERR_QUOTA_7731', mode: 'vector' });
    expect(vector.status).to.equal(200);
    expect(names(vector.body)).to.not.include('ERR_QUOTA_7731');

    const keyword = await search({ q: 'ERR_QUOTA_7731', mode: 'keyword' });
    expect(keyword.status).to.equal(200);
    expect(keyword.body.mode).to.equal('keyword');
    expect(names(keyword.body)).to.deep.equal(['ERR_QUOTA_7731']);
    expect(keyword.body.results[0].components).to.deep.include({ keyword_score: 1, vector_score: 0 });
    expect(keyword.body.results[0].score).to.equal(1);
    expect(keyword.body.results[0].node.id).to.equal(ids.ERR_QUOTA_7731);
    expect(keyword.body.query_plan).to.deep.include({ vector_weight: 0, structural_weight: 0, keyword_weight: 1 });
    expect(keyword.body.query_plan.candidates).to.deep.equal({ vector: null, structural: null, keyword: 1 });

    // keyword_weight 0 (the default): the contract's two signals, and no keyword search at all,
    // although it would have found the code.
    let hybrid = await search({ q: 'ERR_QUOTA_7731', mode: 'hybrid' });
    expect(hybrid.status).to.equal(200);
    expect(names(hybrid.body)).to.not.include('ERR_QUOTA_7731');
    expect(hybrid.body.query_plan.keyword_weight).to.equal(0);
    expect(hybrid.body.query_plan.candidates.keyword).to.equal(null);
    expect(hybrid.body.results.every((r: any) => r.components.keyword_score === 0)).to.equal(true);

    // A weight of its own: a third term, score = (0.6 v + 0.4 s + 0.5 k) × importance.
    const patched = await as(t.api_key).patch('/v1/ontology/config', { search: { keyword_weight: 0.5 } });
    expect(patched.status).to.equal(200);
    try {
      hybrid = await search({ q: 'ERR_QUOTA_7731', mode: 'hybrid', top_k: 25 });
      expect(hybrid.body.query_plan).to.deep.include({
        vector_weight: 0.6,
        structural_weight: 0.4,
        keyword_weight: 0.5,
      });
      expect(hybrid.body.query_plan.candidates.keyword).to.equal(1);
      const code = hybrid.body.results.find((r: any) => r.node.name === 'ERR_QUOTA_7731');
      expect(code.components).to.deep.include({ keyword_score: 1, importance_multiplier: 0.01 });
      for (const r of hybrid.body.results) {
        const c = r.components;
        const weighted = 0.6 * c.vector_score + 0.4 * c.structural_score + 0.5 * c.keyword_score;
        expect(r.score).to.be.closeTo(weighted * c.importance_multiplier, 1e-9);
      }
    } finally {
      await as(t.api_key).patch('/v1/ontology/config', { search: { keyword_weight: 0 } });
    }
  });

  it('splits identifiers on case and punctuation, folds accents, and reads text properties', async () => {
    const first = async (q: string) => names((await search({ q, mode: 'keyword' })).body)[0];
    expect(await first('json file')).to.equal('parseJSONFile');
    expect(await first('parsejsonfile')).to.equal('parseJSONFile');
    expect(await first('parse_json')).to.equal('parseJSONFile');
    expect(await first('creme brulee')).to.equal('Crème Brûlée Café');
    expect(await first('CAFÉ')).to.equal('Crème Brûlée Café');
    expect(await first('http 429 retry')).to.equal('Nightly import');
    // A word that occurs nowhere finds nothing; the structural list is not consulted in keyword mode.
    expect((await search({ q: 'nonexistentword', mode: 'keyword' })).body.results).to.deep.equal([]);
  });

  it('a node created through the API is found at once (Postgres keeps the index)', async () => {
    const created = await as(t.api_key).post('/v1/ontology/nodes', { type: 'error', name: 'E_CONN_RESET_99' });
    expect(created.status).to.be.oneOf([200, 201]);
    const hit = await search({ q: 'E_CONN_RESET_99', mode: 'keyword' });
    expect(names(hit.body)).to.deep.equal(['E_CONN_RESET_99']);
  });
});

describe('search with the OpenAI provider (fake server on loopback)', () => {
  let fake: FakeOpenAI;
  let server: Server;
  let baseUrl: string;
  let t: BootstrapResult;

  const post = async (path: string, token: string, body: unknown) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  };

  before(async () => {
    fake = await startFakeOpenAI();
    const { runtime } = getStack();
    const provider = createOpenAIEmbeddingProvider(
      loadConfig({
        OPENAI_API_KEY: 'sk-test',
        OPENAI_BASE_URL: fake.baseUrl,
        OPENAI_MAX_RETRIES: '0',
        OPENAI_TIMEOUT_MS: '300',
      }),
    );
    // The real app and database, with only the provider swapped for the OpenAI one.
    const search = createSearchService({ uow: runtime.uow, embeddings: provider, credits: runtime.services.credits });
    server = createApp({ ...runtime, services: { ...runtime.services, search } }).listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    t = await newTenant(10);
    await insertNodes(t.workspace_id, [{ name: 'Alice Smith' }, { name: 'Bob Stone' }]);
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await fake.close();
  });
  beforeEach(() => {
    fake.behave({ kind: 'ok' });
    fake.requests.length = 0;
  });

  it('embeds the query through the provider and finds the node', async () => {
    const response = await post('/v1/ontology/search', t.api_key, { q: 'Alice Smith', mode: 'vector' });
    expect(response.status).to.equal(200);
    expect(response.body.results[0].node.name).to.equal('Alice Smith');
    expect(fake.requests).to.have.length(1);
    expect(fake.requests[0]!.body.dimensions).to.equal(512);
  });

  for (const [label, behaviour] of [
    ['a 500', { kind: 'status', status: 500 }],
    ['a timeout', { kind: 'delay', ms: 2000 }],
  ] as const) {
    it(`answers 502 and refunds the charge on ${label} from the provider`, async () => {
      fake.behave(behaviour);
      const before = await creditBalance(t.tenant_id);
      for (const path of ['/v1/ontology/search', '/v1/ontology/nodes/search']) {
        const response = await post(path, t.api_key, { q: 'Alice' });
        expect(response.status, path).to.equal(502);
        expect(response.body.detail).to.include({ error: 'upstream_unavailable', provider: 'openai' });
      }
      expect(await creditBalance(t.tenant_id)).to.equal(before);
      const ledger = await ledgerOf(t.tenant_id);
      const charges = ledger.filter((r: any) => r.amount < 0).slice(-2);
      for (const charge of charges) {
        const refund = ledger.find((r: any) => r.linked_event_id === charge.id);
        expect(refund, 'refund row').to.include({ kind: charge.kind, amount: 1 });
      }
      expect(charges.map((c: any) => c.kind).sort()).to.deep.equal([
        'ontology.search.hybrid',
        'ontology.search.vector',
      ]);
    });
  }

  it('checks credits before calling the provider (402, no request reaches it)', async () => {
    const poor = await newTenant(0);
    const response = await post('/v1/ontology/search', poor.api_key, { q: 'Alice', mode: 'vector' });
    expect(response.status).to.equal(402);
    expect(fake.requests).to.have.length(0);
  });
});

describe('search charges always settle', function () {
  this.timeout(30_000);

  it('the credits-reconcile run refunds a search left pending by a dead process, not a completed one', async () => {
    const { runtime, config, ownerDataSource } = getStack();
    const t = await newTenant(10);
    await insertNodes(t.workspace_id, [{ name: 'Alice Smith' }]);
    const completed = await as(t.api_key).post('/v1/ontology/search', { q: 'Alice', mode: 'vector' });
    expect(completed.status).to.equal(200);

    // A provider that never answers: the search stops between its charge and its settlement, as
    // it would if the process died there. Nothing in this process will ever refund it.
    const stalled = createSearchService({
      uow: runtime.uow,
      embeddings: { name: 'stalled', embed: () => new Promise<number[][]>(() => {}) },
      credits: runtime.services.credits,
    });
    const principal = {
      userId: t.user_id,
      workspaceId: t.workspace_id,
      tenantId: t.tenant_id,
      scopes: new Set(SCOPES),
      credential: { kind: 'user_jwt' as const },
    };
    void stalled.search(principal, { q: 'Alice', mode: 'vector' });
    const stranded = await eventually(async () => {
      const rows = await ledgerOf(t.tenant_id);
      return (
        rows.length === 2 && rows.find((row: { id: string }) => row.id !== completed.body.credit_receipt.ledger_id)
      );
    });
    expect(await creditBalance(t.tenant_id)).to.equal(8);

    // Fifteen minutes later, the scheduled pass runs (as the schedule would start it).
    await ownerDataSource.query(
      `UPDATE credit_ledger SET created_at = created_at - interval '16 minutes' WHERE tenant_id = $1`,
      [t.tenant_id],
    );
    const schedule = MAINTENANCE_SCHEDULES.find((s) => s.name === 'credits-reconcile');
    expect(schedule, 'the credits-reconcile schedule').to.not.equal(undefined);
    const result = await runtime.temporal.client.workflow.execute(creditsReconcileWorkflow.type, {
      args: schedule?.args ?? [],
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowId: `credits-reconcile-test-${t.workspace_id}`,
    });
    expect(result.refunded).to.be.at.least(1);

    expect(await creditBalance(t.tenant_id)).to.equal(9);
    const ledger = await ledgerOf(t.tenant_id);
    expect(ledger.filter((row: any) => row.linked_event_id === stranded.id)).to.have.length(1);
    expect(ledger.filter((row: any) => row.linked_event_id === completed.body.credit_receipt.ledger_id)).to.have.length(
      0,
    );
  });
});

describe('vector search recall: a small workspace beside a big one', function () {
  this.timeout(120_000);

  // Deterministic pseudo-random numbers, so the data is the same on every run.
  function rng(seed: number) {
    let state = seed >>> 0;
    return () => {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      return state / 2 ** 32;
    };
  }
  const random = rng(42);
  const vocabulary = Array.from({ length: 150 }, (_, i) => `w${(i * 7919).toString(36)}x${i}`);
  const phrase = (words: number) =>
    Array.from({ length: words }, () => vocabulary[Math.floor(random() * vocabulary.length)]).join(' ');
  const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);

  it('always returns k rows when k exist, with recall@10 ≥ 0.95 against exact search, filtered or not', async () => {
    const big = await newTenant(1000);
    const small = await newTenant(1000);
    // The big workspace holds ~99% of these vectors: unfiltered HNSW candidates are mostly its rows.
    const bigNodes = Array.from({ length: 4000 }, (_, i) => ({
      name: `${phrase(3)} b${i}`,
      type: i % 4 === 0 ? 'rare' : 'common',
    }));
    for (let i = 0; i < bigNodes.length; i += 1000) await insertNodes(big.workspace_id, bigNodes.slice(i, i + 1000));
    const smallNodes = Array.from({ length: 40 }, (_, i) => ({
      name: `${phrase(3)} s${i}`,
      type: i % 4 === 0 ? 'rare' : 'common',
    }));
    await insertNodes(small.workspace_id, smallNodes);
    await as(small.api_key).patch('/v1/ontology/config', { search: { min_similarity_threshold: 0 } });

    let hits = 0;
    let wanted = 0;
    for (let q = 0; q < 12; q++) {
      const text = phrase(2);
      const types = q % 2 === 1 ? ['rare'] : [];
      const query = localEmbedding(text);
      const exact = smallNodes
        .filter((node) => types.length === 0 || types.includes(node.type))
        .map((node) => cosine(localEmbedding(node.name), query))
        // The threshold (0 here) still applies: hashed features can make unrelated texts slightly negative.
        .filter((similarity) => similarity >= -1e-3)
        .sort((a, b) => b - a)
        .slice(0, 10);
      const response = await as(small.api_key).post('/v1/ontology/search', {
        q: text,
        mode: 'vector',
        top_k: 10,
        filters: { type: types },
      });
      expect(response.status).to.equal(200);
      const results = response.body.results as {
        node: { workspace_id: string; type: string };
        components: { similarity: number };
      }[];
      // k rows whenever k pass the threshold (float4 in the database may put a ±0.001 cosine either side of 0).
      expect(results.length, `query ${q}`).to.be.within(exact.filter((sim) => sim > 1e-3).length, exact.length);
      for (const result of results) {
        expect(result.node.workspace_id).to.equal(small.workspace_id);
        if (types.length) expect(result.node.type).to.equal('rare');
      }
      // Recall with ties: a returned row counts when it is at least as close as the k-th exact one.
      const kth = exact[results.length - 1] ?? -1;
      hits += results.filter((r) => r.components.similarity >= kth - 1e-4).length;
      wanted += results.length;
    }
    expect(hits / wanted).to.be.at.least(0.95);
  });
});
