import Router from '@koa/router';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import { trustProxies } from '../platform/api/client-address';
import { errorHandler, HttpError } from '../platform/api/errors';
import type { RateLimiter } from '../platform/api/rate-limit';
import { requestContext, requestLogger } from '../platform/api/request-context';
import type { AnyRoute } from '../platform/api/route';
import { JSON_BODY_LIMIT, JSON_MEDIA_TYPES, mountRoutes } from '../platform/api/route';
import { checksAnswers } from '../platform/config';
import { httpMetrics } from '../platform/metrics/http';
import { openApiRoutes } from '../platform/openapi/routes';
import { codecCors } from '../platform/temporal/codec-server/cors';
import { API_TAGS, FEATURES } from './features';
import type { Runtime } from './runtime';

/**
 * Every route of the API, from the features' manifests in their order: the router and the OpenAPI
 * document both read it.
 */
export function allRoutes(runtime: Runtime, rateLimiter?: RateLimiter): AnyRoute[] {
  const routes: AnyRoute[] = FEATURES.flatMap((feature) => feature.routes?.(runtime, rateLimiter) ?? []);
  return [...routes, ...openApiRoutes(() => routes, API_TAGS)];
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
  trustProxies(app, runtime.config.TRUST_PROXY_HOPS);
  const router = new Router();
  const { rateLimiter } = runtime;
  const routes = allRoutes(runtime, rateLimiter);
  mountRoutes(router, routes, {
    authenticator: runtime.authenticator,
    rateLimiter,
    validateResponses: checksAnswers(runtime.config),
    standby: runtime.standby !== undefined,
  });

  app.use(requestContext());
  // Outside the error handler, so it counts the status the client got (docs/operations.md, Metrics).
  app.use(httpMetrics());
  if (runtime.config.REQUEST_LOGGING) app.use(requestLogger(runtime.logger));
  app.use(errorHandler(runtime.logger));
  app.use(codecCors(codecOrigins(runtime.config)));
  const parseBody = koaBody({
    json: true,
    jsonStrict: true,
    jsonTypes: [...JSON_MEDIA_TYPES],
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
  // Features' own middleware ahead of the router (OAuth's protocol endpoints, the MCP endpoint's 405 for other
  // methods).
  for (const middleware of FEATURES.flatMap((feature) => feature.middleware?.(runtime) ?? [])) app.use(middleware);
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: true, methodNotAllowed: () => new HttpError(405, 'Method not allowed') }));
  app.use(async (ctx) => {
    throw new HttpError(404, `No route for ${ctx.method} ${ctx.path}`);
  });
  // Errors are already answered by errorHandler; Koa's own logging would print them twice.
  app.silent = true;
  return app;
}
