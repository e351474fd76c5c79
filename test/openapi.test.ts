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

  it('describes raw bodies the 3.1 way: contentMediaType, no format binary, a form example that is a form', () => {
    const document = JSON.parse(JSON.stringify(offlineOpenApiDocument()));
    const binary: string[] = [];
    const walk = (value: unknown, at: string): void => {
      if (!value || typeof value !== 'object') return;
      if ((value as { format?: unknown }).format === 'binary') binary.push(at);
      for (const [name, child] of Object.entries(value)) walk(child, `${at}/${name}`);
    };
    walk(document, '#');
    expect(binary, 'schemas with format: binary').to.deep.equal([]);
    const intake = document.paths['/v1/triggers/webhook/{slug}'].post.requestBody.content;
    for (const [type, media] of Object.entries<{ schema: Record<string, unknown>; example: string }>(intake)) {
      expect(media.schema, type).to.deep.equal({ contentMediaType: type });
    }
    const form = intake['application/x-www-form-urlencoded'].example;
    expect(() => JSON.parse(form)).to.throw();
    expect([...new URLSearchParams(form).keys()]).to.not.be.empty;
  });

  it('documents the 415 on every operation that takes a JSON body', () => {
    const document = offlineOpenApiDocument() as { paths: Record<string, Record<string, any>> };
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (!operation.requestBody?.content?.['application/json'] || path === '/v1/triggers/webhook/{slug}') continue;
        expect(operation.responses['415']?.description, `${method} ${path}`).to.include('application/json');
      }
    }
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
