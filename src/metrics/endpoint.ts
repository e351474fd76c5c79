import type { Middleware } from 'koa';
import { UnauthenticatedError } from '../platform/errors';
import { exposition, METRICS_CONTENT_TYPE } from '../platform/metrics/registry';
import { scrapeAllowed } from '../platform/metrics/scrape';
import type { MetricsSnapshot } from './snapshot';

/**
 * The API's `GET /metrics` (Prometheus text format): the process's figures (HTTP, pools, Temporal
 * client, Node) and the database's cross-workspace ones. Not a contract route (it is not under /v1,
 * not in the OpenAPI document, takes no workspace credential): it is for the operator's scraper,
 * fenced by the network or by METRICS_TOKEN (docs/operations.md).
 */
export function metricsEndpoint(deps: { snapshot: MetricsSnapshot; token?: string }): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== '/metrics') return next();
    (ctx.state as { metricsRoute?: string }).metricsRoute = '/metrics';
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      ctx.status = 405;
      ctx.body = { detail: 'Method not allowed' };
      return;
    }
    if (!scrapeAllowed(ctx.get('authorization') || undefined, deps.token)) {
      throw new UnauthenticatedError('GET /metrics needs the metrics token (Authorization: Bearer METRICS_TOKEN)');
    }
    const text = await exposition(await deps.snapshot.text());
    ctx.type = METRICS_CONTENT_TYPE;
    ctx.body = text;
  };
}
