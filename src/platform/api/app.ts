import Router from '@koa/router';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import { apiKeyRoutes } from '../../api-keys/routes';
import { capabilityRoutes } from '../../capabilities/routes';
import { codeRoutes } from '../../code/routes';
import { consoleRoutes } from '../../console/routes';
import { creditRoutes } from '../../credits/routes';
import { graphRoutes } from '../../graph/routes';
import { healthRoutes } from '../../health/routes';
import { mcpOtherMethods, mcpRoutes } from '../../mcp/routes';
import { mcpTokenRoutes } from '../../mcp-tokens/routes';
import { mergeRoutes } from '../../merges/routes';
import { ontologyConfigRoutes } from '../../ontology-config/routes';
import { promptRoutes } from '../../prompt/routes';
import { runRoutes } from '../../runs/routes';
import type { Runtime } from '../../runtime';
import { searchRoutes } from '../../search/routes';
import { triggerRoutes } from '../../triggers/routes';
import { typeCatalogRoutes } from '../../type-catalog/routes';
import { openApiRoutes } from '../openapi/routes';
import { codecCors } from '../temporal/codec-server/cors';
import { temporalCodecRoutes } from '../temporal/codec-server/routes';
import { errorHandler, HttpError } from './errors';
import type { RateLimiter } from './rate-limit';
import { createRateLimiter } from './rate-limit';
import { requestContext, requestLogger } from './request-context';
import type { AnyRoute } from './route';
import { JSON_BODY_LIMIT, mountRoutes } from './route';

/** Every route of the API, in one list: the router and the OpenAPI document both read it. */
export function allRoutes(runtime: Runtime, rateLimiter?: RateLimiter): AnyRoute[] {
  const routes: AnyRoute[] = [
    ...healthRoutes({ dataSource: runtime.dataSource, temporal: runtime.temporal }),
    ...apiKeyRoutes(runtime.services.apiKeys),
    ...mcpTokenRoutes(runtime.services.mcpTokens),
    ...ontologyConfigRoutes(runtime.services.ontologyConfig),
    ...graphRoutes(runtime.services),
    ...typeCatalogRoutes(runtime.services.typeCatalog),
    ...promptRoutes({ api: runtime.services.promptApi, stream: runtime.services.promptStream }),
    ...mergeRoutes(runtime.services.merges),
    ...searchRoutes(runtime.services.search),
    ...codeRoutes(runtime.services.code),
    ...temporalCodecRoutes({
      codec: runtime.temporal.codec,
      authenticator: runtime.authenticator,
      dataSource: runtime.dataSource,
      config: runtime.config,
      rateLimiter,
    }),
    ...capabilityRoutes(runtime.services.capabilities),
    ...runRoutes(runtime.services.runs),
    ...mcpRoutes(runtime.services.mcp),
    ...creditRoutes(runtime.services.credits),
    ...consoleRoutes(runtime.config),
    ...triggerRoutes(runtime.services.triggers, runtime.services.triggerIntake),
  ];
  return [...routes, ...openApiRoutes(() => routes)];
}

/** Whether a request goes to a route that reads its own raw body (`rawBody`), by method and path. */
function rawBodyMatcher(routes: readonly AnyRoute[]): (method: string, path: string) => boolean {
  const patterns = routes
    .filter((route) => route.rawBody)
    .map((route) => ({
      method: route.method.toUpperCase(),
      // Case-insensitive as the router matches: a path the parser took for JSON would leave the route
      // an already-consumed stream.
      path: new RegExp(`^${route.path.replace(/\{\w+\}/g, '[^/]+')}/?$`, 'i'),
    }));
  return (method, path) => patterns.some((pattern) => pattern.method === method && pattern.path.test(path));
}

/** The UIs allowed to call the codec routes: TEMPORAL_UI_ORIGIN, and with the dev codec the dev server's UI. */
function codecOrigins(config: Runtime['config']): string {
  const origins = [config.TEMPORAL_UI_ORIGIN ?? ''];
  if (config.TEMPORAL_UI_DEV_CODEC && config.NODE_ENV !== 'production') {
    for (const host of ['127.0.0.1', 'localhost']) origins.push(`http://${host}:${config.TEMPORAL_UI_PORT}`);
  }
  return origins.filter(Boolean).join(',');
}

/** The Koa application. Errors are mapped by the first middleware; unknown routes get JSON 404s. */
export function createApp(runtime: Runtime): Koa {
  const app = new Koa();
  app.proxy = false;
  const router = new Router();
  const rateLimiter = createRateLimiter(runtime.config);
  const routes = allRoutes(runtime, rateLimiter);
  mountRoutes(router, routes, { authenticator: runtime.authenticator, rateLimiter });

  app.use(requestContext());
  if (runtime.config.REQUEST_LOGGING) app.use(requestLogger(runtime.logger));
  app.use(errorHandler(runtime.logger));
  app.use(codecCors(codecOrigins(runtime.config)));
  const parseBody = koaBody({
    json: true,
    jsonStrict: true,
    jsonLimit: JSON_BODY_LIMIT,
    formLimit: JSON_BODY_LIMIT,
    textLimit: JSON_BODY_LIMIT,
    multipart: false,
    urlencoded: false,
    text: false,
    onError: (error) => {
      throw error;
    },
  });
  // Routes that read their body as bytes themselves (a webhook's HMAC covers the exact bytes sent).
  const raw = rawBodyMatcher(routes);
  app.use((ctx, next) => (raw(ctx.method, ctx.path) ? next() : parseBody(ctx, next)));
  app.use(mcpOtherMethods());
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: true, methodNotAllowed: () => new HttpError(405, 'Method not allowed') }));
  app.use(async (ctx) => {
    throw new HttpError(404, `No route for ${ctx.method} ${ctx.path}`);
  });
  // Errors are already answered by errorHandler; Koa's own logging would print them twice.
  app.silent = true;
  return app;
}
