/**
 * `npm run bench -- metrics`: what the HTTP metrics middleware (src/platform/metrics/http.ts) costs a
 * request. Two bare Koa apps with the same router and route, one with the middleware: req/s at 1 and
 * 4 clients side by side, then one client alternating the two request by request (the per-pair
 * difference of the p50s). And the time to render the process registry's text (a scrape's own work,
 * without the database snapshot, which is cached for 10 s).
 */
import Router from '@koa/router';
import Koa from 'koa';
import { httpMetrics } from '../src/platform/metrics/http';
import { exposition } from '../src/platform/metrics/registry';
import { markdownTable, measure, numberOption, pairedOverhead, percentile } from './lib/measure';
import { serveLocally } from './lib/servers';

function app(withMetrics: boolean): Koa {
  const koa = new Koa();
  const router = new Router();
  router.get('/v1/things/:thing_id', (ctx) => {
    ctx.body = { id: ctx.params.thing_id, name: 'a thing' };
  });
  if (withMetrics) koa.use(httpMetrics());
  koa.use(router.routes());
  return koa;
}

export async function run(args: string[]): Promise<void> {
  const durationMs = numberOption(args, 'seconds', 5) * 1000;
  const measured = await serveLocally(app(true));
  const bare = await serveLocally(app(false));
  const get = (base: string) => (i: number) => fetch(`${base}/v1/things/${i % 1000}`).then((r) => r.arrayBuffer());

  const rows = [];
  for (const concurrency of [1, 4]) {
    const anchor = await measure('bare Koa + router', get(bare.url), { concurrency, durationMs });
    const subject = await measure('with httpMetrics', get(measured.url), { concurrency, durationMs });
    rows.push({ subject, anchor });
  }
  console.log(markdownTable(rows));

  const paired = await pairedOverhead(get(measured.url), get(bare.url), durationMs);
  console.log(
    `\npaired (1 client, ${paired.pairs} pairs): p50 ${paired.subjectP50.toFixed(3)} ms with, ` +
      `${paired.anchorP50.toFixed(3)} ms without; median difference ${(paired.medianDifference * 1000).toFixed(1)} µs`,
  );

  const renders: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t0 = process.hrtime.bigint();
    await exposition();
    renders.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  renders.sort((a, b) => a - b);
  const text = await exposition();
  console.log(
    `\nregistry text (${text.split('\n').length} lines, ${text.length} bytes): ` +
      `p50 ${percentile(renders, 50).toFixed(2)} ms, p95 ${percentile(renders, 95).toFixed(2)} ms`,
  );
  measured.server.close();
  bare.server.close();
}
