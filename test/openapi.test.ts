import { expect } from 'chai';
import { offlineOpenApiDocument } from '../src/app/openapi';
import { as, request } from './helpers/http';
import { newTenant } from './helpers/tenants';

describe('OpenAPI document', () => {
  let key: string;
  before(async () => {
    key = (await newTenant()).api_key;
  });

  it('serves the same document that npm run lint checks with Spectral (built without a database)', async () => {
    const served = await request('GET', '/v1/openapi.json');
    expect(served.body).to.deep.equal(JSON.parse(JSON.stringify(offlineOpenApiDocument())));
  });

  it('415 for a body in a content encoding the server cannot read, as documented for every body', async () => {
    const response = await request('POST', '/v1/ontology/nodes', {
      token: key,
      rawBody: JSON.stringify({ type: 'person', name: 'Ada' }),
      headers: { 'content-type': 'application/json', 'content-encoding': 'compress' },
    });
    expect(response.status).to.equal(415);
    expect(response.body.detail).to.be.a('string');
  });

  it('404 for a workspace_id the caller does not belong to, on a route whose own query has none', async () => {
    const other = await newTenant();
    const response = await as(key).get(`/v1/ontology/config?workspace_id=${other.workspace_id}`);
    expect(response.status).to.equal(404);
  });

  it('404 for a reference asset that does not exist', async () => {
    expect((await request('GET', '/docs/assets/secrets.txt')).status).to.equal(404);
    expect((await request('GET', '/docs/assets/swagger-ui.css')).headers.get('content-type')).to.contain('text/css');
  });
});
