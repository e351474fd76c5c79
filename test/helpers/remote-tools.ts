import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import { z } from 'zod';

/**
 * A remote MCP server as a connector meets one (issue 41): the official SDK's McpServer over
 * Streamable HTTP, stateless, on an ephemeral loopback port. `lookup_issue` is read-only,
 * `create_issue` records the idempotency key of every call, `slow` answers after `slowMs`, `broken`
 * answers an error and `big` answers `bytes` characters. Every request's Authorization (or X-Api-Key)
 * is recorded. It answers JSON, or with `sse` server-sent events as the SDK's server does by default.
 * `revise('priority')` changes `create_issue`'s schema as a remote end's upgrade does: a required
 * `priority` (old callers' calls still accepted, as `low`); `revise('no_create')` removes it.
 */
export async function startMcpRemote(options: { slowMs?: number; sse?: boolean; holdWrites?: boolean } = {}) {
  const writes: { title: string; key: unknown; priority?: string }[] = [];
  let revision: 'first' | 'priority' | 'no_create' = 'first';
  // With `holdWrites`, `create_issue` records the call and answers only once `releaseWrites()` is called.
  let releaseWrites = () => {};
  const writesReleased = new Promise<void>((resolve) => {
    releaseWrites = resolve;
  });
  const authorizations: (string | undefined)[] = [];

  const build = () => {
    const server = new McpServer({ name: 'tracker', version: '1.0.0' });
    server.registerTool(
      'lookup_issue',
      {
        description: 'Looks an issue up',
        inputSchema: { id: z.number().int() },
        annotations: { readOnlyHint: true },
      },
      async ({ id }) => ({
        content: [{ type: 'text', text: `issue ${id}` }],
        structuredContent: { id, title: `Issue ${id}` },
      }),
    );
    if (revision === 'first') {
      server.registerTool(
        'create_issue',
        { description: 'Files an issue', inputSchema: { title: z.string() } },
        async ({ title }, extra) => {
          writes.push({ title, key: extra._meta?.['weft/idempotencyKey'] });
          if (options.holdWrites) await writesReleased;
          return { content: [{ type: 'text', text: 'filed' }], structuredContent: { number: writes.length, title } };
        },
      );
    }
    if (revision === 'priority') {
      // Listed as required; a call without it (an older client's) is filed as `low`.
      const priority = z.preprocess((value) => value ?? 'low', z.enum(['low', 'high']));
      server.registerTool(
        'create_issue',
        { description: 'Files an issue with a priority', inputSchema: { title: z.string(), priority } },
        async (input, extra) => {
          writes.push({ ...input, key: extra._meta?.['weft/idempotencyKey'] });
          return { content: [{ type: 'text', text: 'filed' }], structuredContent: { number: writes.length, ...input } };
        },
      );
    }
    server.registerTool('slow', { description: 'Answers late', inputSchema: {} }, async () => {
      await new Promise((resolve) => setTimeout(resolve, options.slowMs ?? 5000));
      return { content: [{ type: 'text', text: 'late' }] };
    });
    server.registerTool('broken', { description: 'Always fails', inputSchema: {} }, async () => ({
      isError: true,
      content: [{ type: 'text', text: 'the tracker is on fire' }],
    }));
    server.registerTool(
      'big',
      { description: 'A large answer', inputSchema: { bytes: z.number().int() }, annotations: { readOnlyHint: true } },
      async ({ bytes }) => ({
        content: [{ type: 'text', text: 'x'.repeat(bytes) }],
      }),
    );
    return server;
  };

  const http = createServer(async (req, res) => {
    authorizations.push(req.headers.authorization ?? (req.headers['x-api-key'] as string | undefined));
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const server = build();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: !options.sse,
    });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  http.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => http.once('listening', () => resolve()));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    writes,
    releaseWrites: () => releaseWrites(),
    revise: (next: 'priority' | 'no_create') => {
      revision = next;
    },
    authorizations,
    stop: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

/** An HTTP API served by Koa and the OpenAPI document that describes it (getItem reads, createItem writes). */
export async function startHttpRemote() {
  const created: { name: unknown; key: string | undefined }[] = [];
  const app = new Koa();
  const router = new Router();
  router.get('/items/:id', (ctx) => {
    ctx.body = { id: ctx.params.id, verbose: ctx.query.verbose ?? null };
  });
  router.post('/items', (ctx) => {
    const body = ctx.request.body as { name?: unknown };
    created.push({ name: body.name, key: ctx.get('idempotency-key') || undefined });
    ctx.status = 201;
    ctx.body = { id: String(created.length), name: body.name };
  });
  app.use(koaBody()).use(router.routes());
  const http = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => http.once('listening', () => resolve()));
  const { port } = http.address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}`;
  const openapi = {
    openapi: '3.0.3',
    info: { title: 'Items', version: '1' },
    servers: [{ url: baseUrl }],
    paths: {
      '/items/{id}': {
        get: {
          operationId: 'getItem',
          summary: 'Reads an item',
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'verbose', in: 'query', schema: { type: 'string' } },
          ],
          responses: { '200': { description: 'The item' } },
        },
      },
      '/items': {
        post: {
          operationId: 'createItem',
          summary: 'Creates an item',
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/NewItem' } } },
          },
          responses: { '201': { description: 'Created' } },
        },
      },
    },
    components: {
      schemas: { NewItem: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
    },
  };
  return {
    baseUrl,
    openapi,
    created,
    stop: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
