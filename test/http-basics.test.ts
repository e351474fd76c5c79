import { expect } from 'chai';
import { assertCleanInput } from '../src/platform/api/clean-input';
import { as, request } from './helpers/http';
import { newTenant } from './helpers/tenants';

describe('HTTP basics', () => {
  it('answers liveness and readiness (database and Temporal)', async () => {
    expect((await request('GET', '/v1/health')).body).to.deep.equal({ status: 'ok' });
    const ready = await request('GET', '/v1/health/ready');
    expect(ready.status).to.equal(200);
    expect(ready.body).to.deep.equal({ status: 'ready', checks: { database: 'ok', temporal: 'ok' } });
  });

  it('returns JSON 404 for unknown routes', async () => {
    const response = await request('GET', '/v1/does-not-exist');
    expect(response.status).to.equal(404);
    expect(response.body.detail).to.be.a('string');
  });

  it('gives every response a request id and echoes a client correlation id', async () => {
    const correlation = '6f1c1f0e-3a55-4c55-9a2a-0f8f3c1d2e4b';
    const response = await request('GET', '/v1/health', { headers: { 'x-correlation-id': correlation } });
    expect(response.headers.get('x-correlation-id')).to.equal(correlation);
    expect(response.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    const generated = await request('GET', '/v1/health', { headers: { 'x-correlation-id': 'not a uuid' } });
    expect(generated.headers.get('x-correlation-id')).to.match(/^[0-9a-f-]{36}$/);
  });

  describe('bad input never yields 500', () => {
    let key: string;
    before(async () => {
      key = (await newTenant()).api_key;
    });

    it('400 for malformed JSON', async () => {
      const response = await request('POST', '/v1/auth/me/api-keys', {
        token: key,
        rawBody: '{"name": ',
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).to.equal(400);
      expect(response.body).to.have.property('detail');
    });

    it('413 for a body above 1 MB', async () => {
      const response = await request('POST', '/v1/auth/me/api-keys', {
        token: key,
        rawBody: JSON.stringify({ name: 'x'.repeat(1_100_000), scopes: [] }),
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).to.equal(413);
      expect(response.body).to.have.property('detail');
    });

    it('422 in the HTTPValidationError shape for a wrong body', async () => {
      const response = await as(key).post('/v1/auth/me/api-keys', { name: 42, scopes: 'all' });
      expect(response.status).to.equal(422);
      const locations = response.body.detail.map((issue: { loc: unknown[] }) => issue.loc.join('.'));
      expect(locations).to.include.members(['body.name', 'body.scopes']);
      for (const issue of response.body.detail) {
        expect(issue).to.have.all.keys('loc', 'msg', 'type');
      }
    });

    it('422 for a NUL character anywhere in the input (Postgres stores none)', async () => {
      const body = await as(key).post('/v1/auth/me/api-keys', { name: 'a\u0000b', scopes: [] });
      expect(body.status).to.equal(422);
      expect(body.body.detail[0]).to.deep.include({ loc: ['body', 'name'], type: 'string_nul' });
      const nested = await as(key).patch('/v1/ontology/config', { search: { retrieval_mode: 'x\u0000' } });
      expect(nested.status).to.equal(422);
      const query = await as(key).get('/v1/ontology/nodes/typeahead?q=a%00b');
      expect(query.status).to.equal(422);
      expect(query.body.detail[0].loc).to.deep.equal(['query', 'q']);
    });

    it('422 for an unpaired UTF-16 surrogate in any string, property key or PATCH (jsonb refuses them)', async () => {
      const nodes = as(key);
      const name = await nodes.post('/v1/ontology/nodes', { type: 't', name: 'a\ud800' });
      expect(name.status).to.equal(422);
      expect(name.body.detail[0]).to.deep.include({ loc: ['body', 'name'], type: 'string_surrogate' });
      const value = await nodes.post('/v1/ontology/nodes', { type: 't', name: 'v', properties: { note: 'x\udc00' } });
      expect(value.status).to.equal(422);
      expect(value.body.detail[0].loc).to.deep.equal(['body', 'properties', 'note']);
      const nested = await nodes.post('/v1/ontology/nodes', {
        type: 't',
        name: 'k',
        properties: { list: [{ 'bad\ud83d': 1 }] },
      });
      expect(nested.status).to.equal(422);
      expect(nested.body.detail[0].loc).to.deep.equal(['body', 'properties', 'list', 0, 'bad\ud83d']);

      // A surrogate pair is a well-formed character (an emoji) and is stored as it is.
      const created = await nodes.post('/v1/ontology/nodes', { type: 't', name: 'ok \ud83d\ude00' });
      expect(created.status).to.equal(201);
      expect(created.body.name).to.equal('ok 😀');
      const patched = await nodes.patch(`/v1/ontology/nodes/${created.body.id}`, { properties: { p: '\udfff' } });
      expect(patched.status).to.equal(422);
      expect((await nodes.get(`/v1/ontology/nodes/${created.body.id}`)).body.properties).to.deep.equal({});
      expect((await nodes.patch('/v1/ontology/config', { search: { retrieval_mode: '\ud800' } })).status).to.equal(422);
      // Percent-encoded surrogate bytes are not UTF-8: the query decodes them to U+FFFD, never to a 500.
      const query = await nodes.get('/v1/ontology/nodes/typeahead?q=%ED%A0%80');
      expect(query.status).to.equal(200);
    });

    it('422 for JSON nested deeper than 64 levels: a 6 KB body of 3,000 nested arrays', async () => {
      const deep = `{"type":"t","name":"deep","properties":{"x":${'['.repeat(3000)}${']'.repeat(3000)}}}`;
      expect(deep.length).to.be.within(6000, 6100);
      const response = await request('POST', '/v1/ontology/nodes', {
        token: key,
        rawBody: deep,
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).to.equal(422);
      const [issue] = response.body.detail;
      expect(issue.type).to.equal('json_too_deep');
      // The body is level 1, so the first refused array is the 65th container.
      expect(issue.loc).to.deep.equal(['body', 'properties', 'x', ...Array(62).fill(0)]);

      const nest = (levels: number): unknown => (levels === 0 ? 'leaf' : [nest(levels - 1)]);
      const atTheCap = await as(key).post('/v1/ontology/nodes', {
        type: 't',
        name: 'cap',
        properties: { x: nest(62) },
      });
      expect(atTheCap.status).to.equal(201);
      const overTheCap = await as(key).post('/v1/ontology/nodes', {
        type: 't',
        name: 'cap',
        properties: { x: nest(63) },
      });
      expect(overTheCap.status).to.equal(422);
    });

    it('walks a 200 KB body in a few milliseconds', () => {
      // Wide (10,000 keys), deep (nested 60 levels, repeated) and long-string bodies of about 200 KB each.
      const wide = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, `v${i}x`]));
      const deepOnce = (levels: number): unknown => (levels === 0 ? 'v' : { a: deepOnce(levels - 1) });
      const deep = Array.from({ length: 500 }, () => deepOnce(60));
      const long = { text: 'x'.repeat(200_000) };
      for (const [shape, body] of Object.entries({ wide, deep, long })) {
        expect(JSON.stringify(body).length, shape).to.be.within(150_000, 260_000);
        const started = performance.now();
        assertCleanInput({ properties: body }, 'body');
        const ms = performance.now() - started;
        expect(ms, `${shape}: ${ms.toFixed(1)} ms`).to.be.below(50);
      }
    });

    it('422 for a JSON body that is not an object', async () => {
      const response = await request('POST', '/v1/auth/me/api-keys', {
        token: key,
        rawBody: '[1,2,3]',
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).to.equal(422);
    });

    it('422 for a malformed path id and a query out of range', async () => {
      expect((await as(key).get('/v1/auth/me/api-keys/not-a-uuid')).status).to.equal(422);
      const keys = await as(key).get('/v1/auth/me/api-keys');
      const usage = await as(key).get(`/v1/auth/me/api-keys/${keys.body[0].id}/usage?days=91`);
      expect(usage.status).to.equal(422);
      expect(usage.body.detail[0].loc).to.deep.equal(['query', 'days']);
    });
  });

  it('serves the OpenAPI 3.1 document and a reference page', async () => {
    const document = await request('GET', '/v1/openapi.json');
    expect(document.status).to.equal(200);
    expect(document.body.openapi).to.equal('3.1.0');
    expect(document.body.info.version).to.equal('0.21.8');
    expect(document.body.paths).to.include.keys(
      '/v1/health',
      '/v1/auth/me/api-keys',
      '/v1/auth/me/api-keys/{api_key_id}/usage',
      '/v1/mcp/token',
      '/v1/workspaces/{workspace_id}/mcp-tokens/{key_id}',
    );
    const page = await request('GET', '/docs');
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.contain('text/html');
    expect(page.text).to.contain('/v1/openapi.json');
    const asset = await request('GET', '/docs/assets/swagger-ui-bundle.js');
    expect(asset.status).to.equal(200);
    expect(asset.text.length).to.be.greaterThan(100_000);
  });
});
