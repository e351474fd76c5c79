import { expect } from 'chai';
import { as } from './helpers/http';
import { newTenant } from './helpers/tenants';

describe('GET/PATCH /v1/ontology/config', () => {
  it('starts from the contract defaults (2.7)', async () => {
    const { api_key } = await newTenant();
    const response = await as(api_key).get('/v1/ontology/config');
    expect(response.status).to.equal(200);
    expect(response.body).to.deep.equal({
      search: {
        retrieval_mode: 'hybrid',
        vector_weight: 0.6,
        structural_weight: 0.4,
        keyword_weight: 0,
        min_similarity_threshold: 0.7,
        default_top_k: 20,
        importance_ranking: true,
      },
      importance: {
        recency_influences_importance: true,
        recency_lambda: 0.05,
        boost_per_reference: 0.1,
        base_decay_lambda: 0.01,
        max_importance: 1.0,
        min_importance: 0.0,
      },
      resolver: {
        person_resolver_enabled: true,
        organization_resolver_enabled: false,
        merge_confidence_threshold: 0.9,
        auto_merge_enabled: false,
      },
      staging: { update_prompts: false, agent_writes: false },
    });
  });

  it('updates a subset, keeps the rest, and is per workspace', async () => {
    const a = await newTenant();
    const b = await newTenant();
    const patched = await as(a.api_key).patch('/v1/ontology/config', {
      search: { default_top_k: 7, keyword_weight: 0.3 },
      resolver: { auto_merge_enabled: true },
    });
    expect(patched.status).to.equal(200);
    expect(patched.body.search.default_top_k).to.equal(7);
    expect(patched.body.search.vector_weight).to.equal(0.6);
    expect(patched.body.search.keyword_weight).to.equal(0.3);
    expect(patched.body.resolver.auto_merge_enabled).to.equal(true);
    expect((await as(a.api_key).get('/v1/ontology/config')).body.search.default_top_k).to.equal(7);
    expect((await as(b.api_key).get('/v1/ontology/config')).body.search).to.deep.include({
      default_top_k: 20,
      keyword_weight: 0,
    });
  });

  it('rejects out-of-range values, unknown fields and an inverted importance range with 422', async () => {
    const { api_key } = await newTenant();
    for (const body of [
      { search: { vector_weight: 1.5 } },
      { search: { keyword_weight: 1.5 } },
      { search: { keyword_weight: -0.1 } },
      { search: { keyword_weight: 'high' } },
      { search: { retrieval_mode: 'fuzzy' } },
      { importance: { recency_lambda: -1 } },
      { resolver: { merge_confidence_threshold: 2 } },
      { search: { nonsense: true } },
      { importance: { min_importance: 0.8, max_importance: 0.5 } },
    ]) {
      const response = await as(api_key).patch('/v1/ontology/config', body);
      expect(response.status, JSON.stringify(body)).to.equal(422);
      expect(response.body.detail[0]).to.have.all.keys('loc', 'msg', 'type');
    }
    expect((await as(api_key).get('/v1/ontology/config')).body.search.vector_weight).to.equal(0.6);
  });
});
