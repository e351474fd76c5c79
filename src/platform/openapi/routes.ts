import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { AnyRoute } from '../api/route';
import { defineRoute } from '../api/route';
import { buildOpenApiDocument } from './document';

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

/** The machine-readable description and its browsable page. `routes` is every route the app mounts. */
export function openApiRoutes(routes: () => readonly AnyRoute[]) {
  let document: ReturnType<typeof buildOpenApiDocument> | undefined;
  const tags = ['meta'];
  return [
    defineRoute({
      method: 'get',
      path: '/v1/openapi.json',
      summary: 'The OpenAPI 3.1 document',
      tags,
      public: true,
      handler: async () => {
        document ??= buildOpenApiDocument(routes());
        return document;
      },
    }),
    defineRoute({
      method: 'get',
      path: '/docs',
      summary: 'Browsable API reference',
      tags,
      public: true,
      handler: async ({ ctx }) => {
        ctx.type = 'text/html; charset=utf-8';
        return DOCS_PAGE;
      },
    }),
    defineRoute({
      method: 'get',
      path: '/docs/assets/{file}',
      summary: 'Reference page assets',
      tags,
      public: true,
      params: z.object({ file: z.enum(Object.keys(SWAGGER_ASSETS) as [string, ...string[]]) }),
      handler: async ({ ctx, params }) => {
        ctx.type = SWAGGER_ASSETS[params.file]!;
        ctx.set('Cache-Control', 'public, max-age=86400');
        return readFileSync(path.join(SWAGGER_UI_DIR, params.file));
      },
    }),
  ];
}
