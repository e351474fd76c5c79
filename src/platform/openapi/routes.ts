import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { AnyRoute } from '../api/route';
import { defineRoute } from '../api/route';
import { NotFoundError } from '../errors';
import { buildOpenApiDocument } from './document';
import type { TagDescriptions } from './tags';

const SWAGGER_UI_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const SWAGGER_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
};

// The reference page loads Swagger UI from the installed package: no CDN, works offline.
const DOCS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Weft API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/v1/openapi.json', dom_id: '#swagger-ui', deepLinking: true });</script>
</body></html>`;

const OpenApiDocument = z
  .looseObject({ openapi: z.string() })
  .meta({ id: 'OpenApiDocument', description: 'An OpenAPI 3.1 document.' });

/**
 * The machine-readable description and its browsable page. `routes` is every other route the app
 * mounts; `tags` describes the tags they use.
 */
export function openApiRoutes(routes: () => readonly AnyRoute[], tagDescriptions: TagDescriptions) {
  let document: ReturnType<typeof buildOpenApiDocument> | undefined;
  const tags = ['meta'] as const;
  const own: AnyRoute[] = [
    defineRoute({
      method: 'get',
      path: '/v1/openapi.json',
      operationId: 'getOpenApiDocument',
      summary: 'The OpenAPI 3.1 document',
      description: 'This document: every operation, its inputs, and every status it can answer with.',
      tags,
      public: true,
      response: OpenApiDocument,
      handler: async () => {
        document ??= buildOpenApiDocument([...routes(), ...own], tagDescriptions);
        return { ...document };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/docs',
      operationId: 'getReferencePage',
      summary: 'Browsable API reference',
      description: 'An HTML page (Swagger UI, served from the installed package, no CDN) over `/v1/openapi.json`.',
      tags,
      public: true,
      produces: 'text/html',
      handler: async ({ ctx }) => {
        ctx.type = 'text/html; charset=utf-8';
        return DOCS_PAGE;
      },
    }),
    defineRoute({
      method: 'get',
      path: '/docs/assets/{file}',
      operationId: 'getReferenceAsset',
      summary: 'Reference page assets',
      description: `The reference page's script and style sheet: ${Object.keys(SWAGGER_ASSETS).join(', ')}.`,
      tags,
      public: true,
      params: z.object({ file: z.string().max(100) }),
      produces: [...new Set(Object.values(SWAGGER_ASSETS).map((type) => type.split(';')[0]!))],
      errors: { 404: 'No such asset' },
      handler: async ({ ctx, params }) => {
        const type = SWAGGER_ASSETS[params.file];
        if (!Object.hasOwn(SWAGGER_ASSETS, params.file) || !type) throw new NotFoundError('No such asset');
        ctx.type = type;
        ctx.set('Cache-Control', 'public, max-age=86400');
        return readFileSync(path.join(SWAGGER_UI_DIR, params.file));
      },
    }),
  ];
  return own;
}
