import type { Middleware } from 'koa';

const PREFIX = '/v1/temporal-codec/';

/**
 * CORS for the codec endpoint only: the Temporal UI calls it from the browser, from its own origin,
 * with `Content-Type`, `X-Namespace` and (when it forwards a token) `Authorization`. Only the
 * configured origins (TEMPORAL_UI_ORIGIN, comma-separated) are allowed; the rest of the API sends
 * no CORS headers at all.
 */
export function codecCors(origins: string | undefined): Middleware {
  const allowed = new Set(
    (origins ?? '')
      .split(',')
      .map((origin) => origin.trim().replace(/\/+$/, ''))
      .filter(Boolean),
  );
  return async (ctx, next) => {
    if (!ctx.path.startsWith(PREFIX)) return next();
    const origin = ctx.get('Origin');
    ctx.vary('Origin');
    const permitted = origin !== '' && allowed.has(origin);
    if (permitted) {
      ctx.set('Access-Control-Allow-Origin', origin);
      ctx.set('Access-Control-Allow-Credentials', 'true');
    }
    if (ctx.method === 'OPTIONS') {
      if (permitted) {
        ctx.set('Access-Control-Allow-Methods', 'POST, OPTIONS');
        ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type, X-Namespace');
        ctx.set('Access-Control-Max-Age', '600');
      }
      // A refused origin gets no Allow-* headers, so the browser stops there.
      ctx.status = 204;
      return;
    }
    await next();
  };
}
