import type { ValidateFunction } from 'ajv/dist/2020';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/**
 * Checks every response the tests receive against the served OpenAPI document: the status is one
 * the operation declares, the media type is declared for it, and a JSON body matches its schema.
 * A mismatch throws in the test that made the request. Built once per run from `/v1/openapi.json`.
 */
export interface ResponseValidator {
  check(response: {
    method: string;
    path: string;
    status: number;
    contentType: string | null;
    text: string;
    body: unknown;
  }): void;
}

interface OpenApiResponse {
  content?: Record<string, unknown>;
}

interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  parameters: number;
  operationId: string;
  responses: Record<string, OpenApiResponse>;
}

const DOCUMENT_ID = 'https://weft.invalid/openapi.json';
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const pointer = (...parts: string[]) => parts.map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

let building: Promise<ResponseValidator> | undefined;

/** The run's validator, built from the document the stack at `baseUrl` serves. */
export function responseValidator(baseUrl: string): Promise<ResponseValidator> {
  building ??= fetch(`${baseUrl}/v1/openapi.json`)
    .then((response) => response.json())
    .then((document) => createValidator(document));
  return building;
}

export function createValidator(document: any): ResponseValidator {
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false });
  addFormats(ajv);
  // The document is one schema resource, so its internal $refs resolve; its top-level OpenAPI
  // fields (openapi, info, paths, components …) are declared as inert keywords for strict mode.
  ajv.addVocabulary(Object.keys(document));
  ajv.addSchema({ ...document, $id: DOCUMENT_ID });
  const compiled = new Map<string, ValidateFunction>();
  const schemaAt = (ref: string) => {
    let validate = compiled.get(ref);
    if (!validate) {
      validate = ajv.compile({ $ref: `${DOCUMENT_ID}#/${ref}` });
      compiled.set(ref, validate);
    }
    return validate;
  };

  const operations: Operation[] = [];
  for (const [template, item] of Object.entries<Record<string, any>>(document.paths)) {
    const parameters = (template.match(/\{\w+\}/g) ?? []).length;
    const source = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{\w+\\?\}/g, '[^/]+');
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      operations.push({
        method,
        template,
        pattern: new RegExp(`^${source}$`),
        parameters,
        operationId: operation.operationId,
        responses: operation.responses,
      });
    }
  }
  // Literal segments win over parameters (/nodes/typeahead before /nodes/{node_id}), as in the router.
  operations.sort((a, b) => a.parameters - b.parameters);

  const mediaType = (header: string | null) => (header ?? '').split(';')[0]!.trim().toLowerCase();

  return {
    check({ method, path, status, contentType, text, body }) {
      const where = `${method.toUpperCase()} ${path} → ${status}`;
      const fail = (why: string): never => {
        throw new Error(`Response breaks the OpenAPI document: ${where}: ${why}\nbody: ${text.slice(0, 500)}`);
      };
      // A CORS preflight is the browser's, answered before any route: not an operation of the API.
      if (method.toUpperCase() === 'OPTIONS') return;
      const pathOnly = path.split('?')[0]!;
      const candidates = operations.filter((operation) => operation.pattern.test(pathOnly));
      const operation = candidates.find((candidate) => candidate.method === method.toLowerCase());
      if (!operation) {
        // No route: the app's own 404 (unknown path) or 405 (known path, other method), as ErrorBody.
        const expected = candidates.length ? 405 : 404;
        if (status !== expected) fail(`no operation matches, so ${expected} was expected`);
        const validate = schemaAt(pointer('components', 'schemas', 'ErrorBody'));
        if (!validate(body)) fail(ajv.errorsText(validate.errors));
        return;
      }
      const declared = operation.responses[String(status)];
      if (!declared) fail(`${operation.operationId} does not declare ${status}`);
      const content = declared!.content;
      if (!content) {
        if (text !== '') fail(`${operation.operationId} declares no body for ${status}`);
        return;
      }
      const type = mediaType(contentType);
      if (!(type in content)) fail(`${operation.operationId} declares no ${type || 'empty'} body for ${status}`);
      if (!type.includes('json')) return;
      const validate = schemaAt(
        pointer('paths', operation.template, operation.method, 'responses', String(status), 'content', type, 'schema'),
      );
      if (!validate(body)) fail(`${operation.operationId}: ${ajv.errorsText(validate.errors, { separator: '; ' })}`);
    },
  };
}
