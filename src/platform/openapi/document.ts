import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import type { AnyRoute } from '../api/route';

export const API_VERSION = '0.21.8';

const ErrorBody = z.object({ detail: z.unknown() }).meta({ id: 'ErrorBody' });
const HTTPValidationError = z
  .object({
    detail: z.array(z.object({ loc: z.array(z.union([z.string(), z.number()])), msg: z.string(), type: z.string() })),
  })
  .meta({ id: 'HTTPValidationError' });

const json = (schema: z.ZodType) => ({ 'application/json': { schema } });

/** The OpenAPI 3.1 document, generated from the same zod schemas that validate requests. */
export function buildOpenApiDocument(routes: readonly AnyRoute[]) {
  const registry = new OpenAPIRegistry();
  const bearer = registry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'An API key (weft_sk_…), a user JWT or an MCP-audience JWT.',
  });
  for (const route of routes) {
    const status = route.status ?? 200;
    const responses: Record<string, { description: string; content?: Record<string, { schema: z.ZodType }> }> = {
      [status]: {
        description: route.summary,
        ...(route.response ? { content: json(route.response) } : {}),
        ...(route.produces ? { content: { [route.produces]: { schema: z.string() } } } : {}),
      },
    };
    if (!route.public) {
      responses[401] = { description: 'Missing or invalid credential', content: json(ErrorBody) };
      if (route.scope) responses[403] = { description: `Missing scope ${route.scope}`, content: json(ErrorBody) };
    }
    if (route.params || route.query || route.body) {
      responses[422] = { description: 'Validation error', content: json(HTTPValidationError) };
    }
    for (const [code, description] of Object.entries(route.errors ?? {})) {
      responses[code] = { description: String(description), content: json(ErrorBody) };
    }
    registry.registerPath({
      method: route.method,
      path: route.path,
      summary: route.summary,
      tags: route.tags,
      security: route.public ? [] : [{ [bearer.name]: [] }],
      request: {
        ...(route.params ? { params: route.params } : {}),
        ...(route.query ? { query: route.query } : {}),
        ...(route.body ? { body: { content: json(route.body), required: true } } : {}),
      },
      responses,
    });
  }
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Weft knowledge-graph service',
      version: API_VERSION,
      description: 'A workspace-scoped knowledge graph for AI agents.',
    },
    servers: [{ url: '/' }],
  });
}
