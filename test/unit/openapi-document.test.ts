import Router from '@koa/router';
import { expect } from 'chai';
import { z } from 'zod';
import { offlineOpenApiDocument } from '../../src/app/openapi';
import type { AnyRoute } from '../../src/platform/api/route';
import { defineRoute, mountRoutes } from '../../src/platform/api/route';
import { buildOpenApiDocument } from '../../src/platform/openapi/document';
import { CREDIT_COSTS } from '../../src/rules/costs';

const TAGS = { ontology: 'Things and their shelves.' };
const Thing = z.object({ name: z.string().min(1) }).meta({ id: 'Thing' });
const handler = async () => ({ name: 'x' });
const noAuthenticator = {
  authenticate: () => {
    throw new Error('not called');
  },
};

const route = (overrides: Partial<AnyRoute> = {}): AnyRoute =>
  defineRoute({
    method: 'get',
    path: '/v1/things',
    operationId: 'listThings',
    summary: 'Things',
    description: 'All the things.',
    tags: ['ontology'],
    response: Thing,
    handler,
    ...overrides,
  }) as AnyRoute;

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const operationsOf = (document: any) =>
  Object.entries<any>(document.paths).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({ path, method, ...item[method] })),
  );

describe('OpenAPI document from the route list', () => {
  describe('start-up checks', () => {
    it('refuses to mount two routes with the same operationId', () => {
      const routes = [route(), route({ path: '/v1/other-things' })];
      expect(() => mountRoutes(new Router(), routes, { authenticator: noAuthenticator })).to.throw(
        /listThings is used twice/,
      );
    });

    it('refuses an operationId that is not camelCase, and an empty description', () => {
      expect(() =>
        mountRoutes(new Router(), [route({ operationId: 'list_things' })], { authenticator: noAuthenticator }),
      ).to.throw(/camelCase/);
      expect(() =>
        mountRoutes(new Router(), [route({ description: ' ' })], { authenticator: noAuthenticator }),
      ).to.throw(/description/);
    });

    it('refuses a body whose example does not match its schema', () => {
      const bad = route({ method: 'post', body: Thing, example: { name: '' } });
      expect(() => mountRoutes(new Router(), [bad], { authenticator: noAuthenticator })).to.throw(
        /example does not match/,
      );
    });

    it('refuses a route whose tag no feature describes', () => {
      expect(() => buildOpenApiDocument([route({ tags: ['shelves'] })], TAGS)).to.throw(/no feature describes the tag/);
    });

    it('refuses a route with a path parameter that cannot answer 404', () => {
      const asset = route({ path: '/assets/{file}', public: true, params: z.object({ file: z.string() }) });
      expect(() => buildOpenApiDocument([asset], TAGS)).to.throw(/must declare its 404/);
    });
  });

  describe('statuses derived from the route’s shape', () => {
    const metered = route({
      method: 'post',
      operationId: 'createThing',
      scope: 'search:read',
      credits: ['ontology.search.vector'],
      body: Thing,
      example: { name: 'lamp' },
      errors: { 404: 'No such shelf' },
    });
    const document: any = buildOpenApiDocument([metered, route({ operationId: 'getHealth', public: true })], TAGS);
    const create = document.paths['/v1/things'].post;

    it('an authenticated, scoped, metered route with a body declares every refusal it can meet', () => {
      expect(Object.keys(create.responses).sort()).to.deep.equal(
        ['200', '400', '401', '402', '403', '404', '413', '415', '422', '429', '500', '503', '504'].sort(),
      );
      expect(create.responses['402'].content['application/json'].schema.$ref).to.equal(
        '#/components/schemas/InsufficientCredits',
      );
      expect(create.responses['422'].content['application/json'].schema.$ref).to.equal(
        '#/components/schemas/HTTPValidationError',
      );
      expect(create.responses['429'].headers).to.have.property('Retry-After');
      expect(create.responses['404'].description).to.match(/^No such shelf; or `workspace_id`/);
      expect(create.requestBody.content['application/json'].example).to.deep.equal({ name: 'lamp' });
    });

    it('the description carries the price from the cost table and the scope', () => {
      const cost = CREDIT_COSTS['ontology.search.vector'];
      expect(create.description).to.contain(`Costs ${cost} credit`).and.contain('`ontology.search.vector`');
      expect(create.description).to.contain('`search:read` scope');
    });

    it('every authenticated route takes ?workspace_id=, so the document lists it', () => {
      const names = create.parameters.map((parameter: { name: string }) => parameter.name);
      expect(names).to.include('workspace_id');
    });

    it('a public route without input declares only success and 500, and no security', () => {
      const health = document.paths['/v1/things'].get;
      expect(Object.keys(health.responses).sort()).to.deep.equal(['200', '500']);
      expect(health.security).to.deep.equal([]);
    });
  });

  describe('the whole API', () => {
    const document: any = offlineOpenApiDocument();
    const operations = operationsOf(document);

    it('names and describes every operation, with unique camelCase ids', () => {
      const ids = operations.map((operation) => operation.operationId);
      expect(new Set(ids).size).to.equal(ids.length);
      for (const operation of operations) {
        expect(operation.operationId, operation.path).to.match(/^[a-z][a-zA-Z0-9]*$/);
        expect(operation.description, operation.operationId).to.be.a('string').and.not.equal('');
      }
    });

    it('declares the tags it uses, with descriptions, and contact and license', () => {
      const declared = new Set(document.tags.map((tag: { name: string }) => tag.name));
      for (const operation of operations) for (const tag of operation.tags) expect(declared).to.include(tag);
      for (const tag of document.tags) expect(tag.description).to.be.a('string');
      expect(document.info.contact).to.be.an('object');
      expect(document.info.license.name).to.be.a('string');
    });

    it('says which credentials each route takes: MCP tokens never reach the *:manage routes', () => {
      const schemes = (id: string) =>
        operations
          .find((operation) => operation.operationId === id)
          .security.flatMap(Object.keys)
          .sort();
      expect(schemes('createNode')).to.deep.equal(['apiKey', 'mcpToken', 'userJwt']);
      expect(schemes('createApiKey')).to.deep.equal(['apiKey', 'userJwt']);
      expect(schemes('getLiveness')).to.deep.equal([]);
    });

    it('prices every metered operation from the cost table', () => {
      const prompt = operations.find((operation) => operation.operationId === 'runPrompt');
      for (const kind of ['ontology.prompt.update', 'ontology.prompt.query', 'ontology.prompt.both'] as const) {
        expect(prompt.description).to.contain(`${CREDIT_COSTS[kind]} credits (\`${kind}\`)`);
      }
      expect(prompt.responses).to.have.property('402');
    });
  });
});
