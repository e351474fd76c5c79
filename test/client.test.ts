import { expect } from 'chai';
import { createWeftClient } from '../src/client';
import { responseValidator } from './helpers/openapi-validator';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

/** A fetch that also holds every answer to the OpenAPI document, as the suite's HTTP helper does. */
const validatingFetch: typeof fetch = async (input, init) => {
  const request = new Request(input, init);
  const response = await fetch(request);
  const text = await response.clone().text();
  const contentType = response.headers.get('content-type');
  const url = new URL(request.url);
  (await responseValidator(getStack().baseUrl)).check({
    method: request.method,
    path: url.pathname + url.search,
    status: response.status,
    contentType,
    text,
    body: (contentType ?? '').includes('json') && text ? JSON.parse(text) : text,
  });
  return response;
};

describe('the TypeScript client (weft/client), end to end', function () {
  this.timeout(30_000);

  it('creates two nodes and an edge, searches and asks a prompt through its typed calls', async () => {
    const tenant = await newTenant(20);
    const weft = createWeftClient({ baseUrl: getStack().baseUrl, token: tenant.api_key, fetch: validatingFetch });

    const ada = await weft.POST('/v1/ontology/nodes', {
      body: { type: 'person', name: 'Ada Lovelace', properties: { email: 'ada@example.org' } },
    });
    const engines = await weft.POST('/v1/ontology/nodes', {
      body: { type: 'organization', name: 'Analytical Engines' },
    });
    expect(ada.response.status).to.equal(201);
    expect(ada.data?.name).to.equal('Ada Lovelace');
    if (!ada.data || !engines.data) throw new Error('node creation failed');

    const edge = await weft.POST('/v1/ontology/edges', {
      body: { type: 'WORKS_AT', source_node_id: ada.data.id, target_node_id: engines.data.id },
    });
    expect(edge.response.status).to.equal(201);
    expect(edge.data?.source_node_id).to.equal(ada.data.id);

    const search = await weft.POST('/v1/ontology/search', { body: { q: 'Ada', mode: 'structural', top_k: 5 } });
    expect(search.error).to.equal(undefined);
    expect(search.data?.results.map((result) => result.node.name)).to.include('Ada Lovelace');

    const prompt = await weft.POST('/v1/ontology/prompt', {
      body: { prompt: 'Who is Ada Lovelace?', force_intent: 'query' },
    });
    expect(prompt.error).to.equal(undefined);
    expect(prompt.data?.intent).to.equal('query');
    expect(prompt.data?.citations).to.include(ada.data.id);
  });

  it('reports the contract’s error body as a typed error', async () => {
    const tenant = await newTenant(0);
    const weft = createWeftClient({ baseUrl: getStack().baseUrl, token: tenant.api_key, fetch: validatingFetch });
    const missing = await weft.GET('/v1/ontology/nodes/{node_id}', {
      params: { path: { node_id: '6f1c1f0e-3a55-4c55-9a2a-0f8f3c1d2e4b' } },
    });
    expect(missing.response.status).to.equal(404);
    expect(missing.error).to.deep.equal({ detail: 'Node not found' });
  });
});
