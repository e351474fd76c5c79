/**
 * `npm run bench -- webhooks [--seconds 3] [--clients 4]`
 *
 * The signed webhook intake (issue 13), each figure beside an anchor measured in the same run:
 * a bare Koa route that reads the raw body, verifies the same HMAC-SHA256 over `<t>.<body>` and
 * inserts one row with `pg`. The subject's trigger has a false filter, so nothing is dispatched:
 * the figures are the intake's own (slug lookup, streaming read with the 2 MiB cap, HMAC, the
 * delivery record under RLS). Goals: ≥ 0.7× the anchor's throughput, p95 ≤ anchor p95 + 5 ms.
 * A trigger without a filter, which dispatches a run per delivery, is reported separately.
 * Data goes into weft_bench; the bench's deliveries and anchor table are removed afterwards.
 */

import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import Koa from 'koa';
import pg from 'pg';
import { createApp } from '../src/app/http';
import { LIMITS } from '../src/rules/limits';
import { readRawBody } from '../src/triggers/raw-body';
import type { Measurement } from './lib/measure';
import { markdownTable, measure, numberOption } from './lib/measure';
import { bootBenchService, serveLocally } from './lib/servers';

const sign = (secret: string, t: number, body: Buffer) =>
  createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');

/** A JSON body of about `bytes` bytes. */
const bodyOf = (bytes: number) => {
  const shell = JSON.stringify({ action: 'opened', padding: '' });
  return Buffer.from(JSON.stringify({ action: 'opened', padding: 'x'.repeat(Math.max(0, bytes - shell.length)) }));
};

/**
 * The anchor: the least a webhook receiver can do. Reads the raw body (capped), verifies one v1
 * against one secret in constant time, inserts one row with a pooled `pg` client.
 */
function anchorApp(pool: pg.Pool, secret: string): Koa {
  const app = new Koa();
  app.use(async (ctx) => {
    const body = await readRawBody(ctx.req, LIMITS.webhook.bodyBytes);
    if (!body) {
      ctx.status = 413;
      return;
    }
    const header = String(ctx.get('x-service-signature'));
    const t = Number(/(?:^|,)t=(\d+)/.exec(header)?.[1]);
    const v1 = /(?:^|,)v1=([0-9a-f]{64})/.exec(header)?.[1] ?? '';
    const expected = createHmac('sha256', secret).update(`${t}.`).update(body).digest();
    const ok =
      v1.length === 64 &&
      Math.abs(Date.now() / 1000 - t) <= LIMITS.webhook.timestampSkewSeconds &&
      timingSafeEqual(expected, Buffer.from(v1, 'hex'));
    const { rows } = await pool.query(
      'INSERT INTO bench_webhook_anchor (headers, body, status_code) VALUES ($1, $2, $3) RETURNING id',
      [JSON.stringify(ctx.req.rawHeaders), body, ok ? 202 : 401],
    );
    ctx.status = ok ? 202 : 401;
    ctx.body = { delivery_id: rows[0].id };
  });
  return app;
}

export async function run(args: string[]): Promise<void> {
  const seconds = numberOption(args, 'seconds', 3);
  const clients = numberOption(args, 'clients', 4);
  const service = await bootBenchService();
  const { config, runtime, owner, provisioning } = service;
  const tenant = await provisioning.bootstrap({ name: 'weft-bench-webhooks' });
  const { server, url } = await serveLocally(createApp(runtime));

  const manage = async (body: unknown) => {
    const response = await fetch(`${url}/v1/triggers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (response.status !== 201) throw new Error(`creating a trigger: ${response.status} ${await response.text()}`);
    return (await response.json()) as { id: string; slug: string; secret: string };
  };
  const run = { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance' }] } };
  const quiet = await manage({
    slug: `bench-${randomUUID().slice(0, 8)}`,
    run,
    event_filter: { expression: "body.action == 'never'" },
  });
  const dispatching = await manage({ slug: `bench-${randomUUID().slice(0, 8)}`, run });

  await owner.query(`CREATE TABLE IF NOT EXISTS bench_webhook_anchor (
    id bigserial PRIMARY KEY, received_at timestamptz NOT NULL DEFAULT now(),
    headers jsonb NOT NULL, body bytea, status_code integer NOT NULL)`);
  const pool = new pg.Pool({ connectionString: config.DATABASE_OWNER_URL, max: config.DATABASE_POOL_SIZE });
  const { server: anchorServer, url: anchorUrl } = await serveLocally(anchorApp(pool, quiet.secret));

  let sequence = 0;
  const post = async (target: string, secret: string, template: Buffer) => {
    const t = Math.floor(Date.now() / 1000);
    // A distinct body per request, as real events are: the same signed bytes at one `t` are a replay,
    // which the intake answers as a duplicate of the first.
    const body = Buffer.from(template);
    body.write(String(sequence++).padStart(12, '0'), template.indexOf('"padding":"') + 11, 'latin1');
    const response = await fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-signature': `t=${t},v1=${sign(secret, t, body)}` },
      body,
    });
    await response.arrayBuffer();
    if (response.status !== 202) throw new Error(`${target}: ${response.status}`);
  };

  const rows: { subject: Measurement; anchor?: Measurement }[] = [];
  for (const [label, bytes] of [
    ['1 KiB', 1024],
    ['1 MiB', 1024 * 1024],
  ] as const) {
    const body = bodyOf(bytes);
    const options = { concurrency: clients, durationMs: seconds * 1000 };
    const anchor = await measure(
      `anchor: Koa + HMAC + pg insert, ${label}`,
      () => post(anchorUrl, quiet.secret, body),
      options,
    );
    const subject = await measure(
      `intake, false filter, ${label}`,
      () => post(`${url}/v1/triggers/webhook/${quiet.slug}`, quiet.secret, body),
      options,
    );
    rows.push({ subject, anchor });
    console.error(`[bench] ${label}: ${subject.rps.toFixed(0)} vs anchor ${anchor.rps.toFixed(0)} req/s`);
  }
  const dispatched = await measure(
    'intake, dispatching a run, 1 KiB',
    () => post(`${url}/v1/triggers/webhook/${dispatching.slug}`, dispatching.secret, bodyOf(1024)),
    { concurrency: clients, durationMs: seconds * 1000 },
  );
  rows.push({ subject: dispatched, anchor: rows[0]!.anchor });

  console.log(`\n${clients} clients, ${seconds} s per point, keep-alive fetch; one fresh t and HMAC per request.\n`);
  console.log(markdownTable(rows));
  console.log('\n| goal | result |\n|---|---|');
  for (const { subject, anchor } of rows.slice(0, 2)) {
    const ratio = subject.rps / anchor!.rps;
    const p95Gap = subject.p95 - anchor!.p95;
    console.log(
      `| ${subject.name}: ≥ 0.7× anchor req/s | ${ratio >= 0.7 ? 'met' : '**missed**'}: ×${ratio.toFixed(2)} |`,
    );
    console.log(
      `| ${subject.name}: p95 ≤ anchor p95 + 5 ms | ${p95Gap <= 5 ? 'met' : '**missed**'}: ` +
        `${subject.p95.toFixed(2)} vs ${anchor!.p95.toFixed(2)} ms (+${p95Gap.toFixed(2)}) |`,
    );
  }

  await new Promise<void>((resolve) => server.close(() => resolve()));
  await new Promise<void>((resolve) => anchorServer.close(() => resolve()));
  await pool.end();
  await owner.query(`DELETE FROM webhook_deliveries WHERE trigger_id = ANY($1)`, [[quiet.id, dispatching.id]]);
  await owner.query(`DROP TABLE IF EXISTS bench_webhook_anchor`);
  await service.stop();
}
