import { expect } from 'chai';
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
