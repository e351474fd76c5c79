import { expect } from 'chai';
import { offlineOpenApiDocument } from '../../src/app/openapi';
import { createValidator } from '../helpers/openapi-validator';

// The response check the integration tests rely on: it must fail loudly, not pass everything.
describe('response validation against the OpenAPI document', () => {
  const validator = createValidator(offlineOpenApiDocument());
  const json = 'application/json; charset=utf-8';
  const check = (method: string, path: string, status: number, body: unknown, contentType: string | null = json) =>
    validator.check({ method, path, status, contentType, body, text: body === undefined ? '' : JSON.stringify(body) });

  it('accepts a declared status whose body matches its schema', () => {
    check('GET', '/v1/health', 200, { status: 'ok' });
    check('GET', '/v1/ontology/nodes/typeahead?q=ada', 200, []);
    check('GET', '/v1/ontology/nodes/0b6f2d4e-8c1a-4f3b-9d2e-5a7c6b8e9f01', 404, { detail: 'Node not found' });
  });

  it('throws for a status the operation does not declare', () => {
    expect(() => check('GET', '/v1/health', 418, { detail: 'teapot' })).to.throw(/getLiveness does not declare 418/);
  });

  it('throws for a body that breaks the schema', () => {
    expect(() => check('GET', '/v1/health', 200, { status: 'fine' })).to.throw(/getLiveness/);
    expect(() => check('POST', '/v1/ontology/nodes', 422, { detail: 'not a list' })).to.throw(/createNode/);
  });

  it('throws for an undeclared media type, and for a body where none is declared', () => {
    expect(() => check('GET', '/v1/health', 200, 'ok', 'text/plain')).to.throw(/no text\/plain body/);
    const revoke =
      '/v1/workspaces/0b6f2d4e-8c1a-4f3b-9d2e-5a7c6b8e9f01/mcp-tokens/0b6f2d4e-8c1a-4f3b-9d2e-5a7c6b8e9f02';
    check('DELETE', revoke, 204, undefined, null);
    expect(() => check('DELETE', revoke, 204, { ok: true })).to.throw(/declares no body/);
  });

  it('takes a request no route serves as the app’s JSON 404 or 405', () => {
    check('GET', '/v1/nowhere', 404, { detail: 'No route for GET /v1/nowhere' });
    check('PUT', '/v1/health', 405, { detail: 'Method not allowed' });
    expect(() => check('GET', '/v1/nowhere', 200, {})).to.throw(/no operation matches/);
  });
});
