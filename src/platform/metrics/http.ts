import type { Middleware } from 'koa';
import { Counter, Histogram } from 'prom-client';
import { metricsRegistry } from './registry';

const LABELS = ['method', 'route', 'status'] as const;

const requests = new Counter({
  name: 'weft_http_requests_total',
  help: 'HTTP requests answered, by method, route template and status.',
  labelNames: LABELS,
  registers: [metricsRegistry],
});

const duration = new Histogram({
  name: 'weft_http_request_duration_seconds',
  help: 'Time to answer an HTTP request (until the body is handed to Node), by method, route template and status.',
  labelNames: LABELS,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [metricsRegistry],
});

/** Methods as the router knows them; anything else is one label value, so a client cannot add series. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * The route a request matched, as its template (`/v1/ontology/nodes/{node_id}`), never the path itself: the path
 * holds ids. A request no route matched (a 404, or an endpoint a feature's middleware answers
 * itself, such as /mcp) is `unmatched` unless that middleware named its route in `ctx.state.metricsRoute`.
 */
function routeOf(ctx: Parameters<Middleware>[0]): string {
  const state = ctx.state as { metricsRoute?: string };
  const matched = (ctx as { _matchedRoute?: string })._matchedRoute;
  // In the contract's spelling (`/v1/nodes/{node_id}`), as the OpenAPI document names it.
  return state.metricsRoute ?? matched?.replace(/:(\w+)/g, '{$1}') ?? 'unmatched';
}

/**
 * Counts and times every request. Placed outside the error handler's mapping, it reads the status
 * the client received; an error that escapes (which the error handler ahead of the router prevents)
 * counts as its own status or 500.
 */
export function httpMetrics(): Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    let status: number | undefined;
    try {
      await next();
    } catch (error) {
      status = (error as { status?: number }).status ?? 500;
      throw error;
    } finally {
      const labels = {
        method: METHODS.has(ctx.method) ? ctx.method : 'OTHER',
        route: routeOf(ctx),
        status: String(status ?? ctx.status),
      };
      requests.inc(labels);
      duration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    }
  };
}
