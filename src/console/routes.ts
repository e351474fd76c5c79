import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Context } from 'koa';
import { z } from 'zod';
import { defineRoute } from '../platform/api/route';
import type { Config } from '../platform/config';
import { NotFoundError } from '../platform/errors';

const STATIC_DIR = path.join(__dirname, 'static');
// The package exports no package.json; its CommonJS entry sits beside the ES module build.
const CYTOSCAPE = path.join(path.dirname(require.resolve('cytoscape')), 'cytoscape.esm.min.mjs');
const JS = 'application/javascript; charset=utf-8';

/** Every file the page may load, by name: nothing else under the directory (or elsewhere) is served. */
const ASSETS: Record<string, { file: string; type: string }> = {
  'console.css': { file: path.join(STATIC_DIR, 'console.css'), type: 'text/css; charset=utf-8' },
  'cytoscape.mjs': { file: CYTOSCAPE, type: JS },
  ...Object.fromEntries(
    [
      'app',
      'api',
      'dom',
      'approvals',
      'change-sets',
      'budgets',
      'schema-form',
      'merges',
      'runs',
      'schedules',
      'connectors',
      'graph',
      'credits',
      'oauth',
    ].map((name) => [`${name}.js`, { file: path.join(STATIC_DIR, `${name}.js`), type: JS }]),
  ),
};

/**
 * The page may run only its own scripts and styles and talk only to this origin: no inline script
 * or style, no plugin, no framing, no form posting elsewhere. The API calls are same-origin, so no CORS.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const escapeAttribute = (value: string) =>
  value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A console HTML page's headers and handler: the CSP and its siblings (and, when asked, no caching). */
const servedPage = (html: string, options: { cache?: boolean } = {}) => ({
  responseHeaders: {
    'Content-Security-Policy': {
      description: 'Only this origin’s scripts, styles and API.',
      schema: { type: 'string' as const },
    },
  },
  handler: async ({ ctx }: { ctx: Context }) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Content-Security-Policy', CONSOLE_CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    if (options.cache === false) ctx.set('Cache-Control', 'no-store');
    return html;
  },
});

/** Where the runs view links an execution: the first TEMPORAL_UI_ORIGIN, else the dev server's UI. */
export function temporalUiBase(config: Pick<Config, 'TEMPORAL_UI_ORIGIN' | 'TEMPORAL_UI_PORT'>): string {
  const origin = config.TEMPORAL_UI_ORIGIN?.split(',')[0]?.trim();
  return (origin || `http://127.0.0.1:${config.TEMPORAL_UI_PORT}`).replace(/\/+$/, '');
}

/** The reviewer console (issue 16): one HTML page and its static modules; every call it makes goes to /v1. */
export function consoleRoutes(config: Config) {
  // Settings reach the page as meta tags: the CSP allows no inline script to carry them.
  const page = readFileSync(path.join(STATIC_DIR, 'index.html'), 'utf8')
    .replace('{{TEMPORAL_UI}}', escapeAttribute(temporalUiBase(config)))
    .replace('{{TEMPORAL_NAMESPACE}}', escapeAttribute(config.TEMPORAL_NAMESPACE));
  const consentPage = readFileSync(path.join(STATIC_DIR, 'oauth.html'), 'utf8');
  const tags = ['console'] as const;
  return [
    defineRoute({
      method: 'get',
      path: '/console',
      operationId: 'getConsole',
      summary: 'The reviewer console (HTML)',
      description:
        'A single-page app for reviewers: pending approvals, the merge queue, runs with their timelines and ' +
        'audit chains, a graph explorer and the credit ledger. It signs in with an API key or user JWT kept in ' +
        'the tab’s session storage and calls only this API with it. Served with a strict Content-Security-Policy.',
      tags,
      public: true,
      produces: 'text/html',
      ...servedPage(page, { cache: false }),
    }),
    defineRoute({
      method: 'get',
      path: '/console/oauth',
      operationId: 'getConsoleOAuthConsent',
      summary: 'The OAuth consent page (HTML): where /oauth/authorize sends an MCP client’s person',
      description:
        'The person signs in with a user JWT, picks the workspace, sees the scopes the client asks for (never ' +
        'more than an MCP token may hold) and allows or denies; the page then follows the answer of ' +
        '`POST /v1/oauth/consent` back to the client. Same Content-Security-Policy as `/console`.',
      tags,
      public: true,
      produces: 'text/html',
      ...servedPage(consentPage),
    }),
    defineRoute({
      method: 'get',
      path: '/console/assets/{file}',
      operationId: 'getConsoleAsset',
      summary: 'The console’s scripts and style sheet',
      description:
        "The console's ES modules (Cytoscape.js from the installed package, no CDN) and style sheet: " +
        `${Object.keys(ASSETS).join(', ')}.`,
      tags,
      public: true,
      params: z.object({ file: z.string().max(100) }),
      produces: ['application/javascript', 'text/css'],
      errors: { 404: 'No such asset' },
      handler: async ({ ctx, params }) => {
        const asset = Object.hasOwn(ASSETS, params.file) ? ASSETS[params.file] : undefined;
        if (!asset) throw new NotFoundError('No such asset');
        ctx.type = asset.type;
        ctx.set('X-Content-Type-Options', 'nosniff');
        ctx.set('Cache-Control', 'no-cache');
        return readFileSync(asset.file);
      },
    }),
  ];
}
