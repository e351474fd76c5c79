/**
 * `npm run bench -- run-events [--streams 100] [--events 400] [--rate 100]` (also the end of `-- runs`)
 *
 * The run event streams (issue 26): how long from the commit of a step's event to its arrival at a
 * connected SSE client, with `--streams` streams open over HTTP, next to its anchor, a bare
 * Postgres LISTEN/NOTIFY round trip (a transaction that notifies, committed → the listening
 * connection has it), measured in the same run, as a ratio. Goal: p95 ≤ 50 ms at 100 streams.
 * - one run per stream: events committed at `--rate` a second (default 100) over the runs in turn;
 * - one run, every stream on it: each event reaches all of them (the fan-out).
 * The commits are `recordRunEvent` in a unit of work of their own, as a step's completion writes
 * it; the clock starts when the writing transaction begins, as the anchor's does (BEGIN, a
 * pg_notify, COMMIT on a bare connection), so both include the write and its commit.
 */
import { Client } from 'pg';
import { createApp } from '../src/app/http';
import { recordRunEvent } from '../src/runs/event-repository';
import { insertExecution } from '../src/runs/execution-repository';
import { numberOption, percentile } from './lib/measure';
import { bootBenchService, serveLocally } from './lib/servers';

type Service = Awaited<ReturnType<typeof bootBenchService>>;

interface Figures {
  name: string;
  count: number;
  p50: number;
  p95: number;
  p99: number;
}

const figures = (name: string, samples: number[]): Figures => {
  samples.sort((a, b) => a - b);
  return {
    name,
    count: samples.length,
    p50: percentile(samples, 50),
    p95: percentile(samples, 95),
    p99: percentile(samples, 99),
  };
};

/** An SSE client that stamps each event's arrival under its number (the bench's events carry `output.n`). */
async function openStream(url: string, token: string, arrived: (key: string, at: number) => void) {
  const abort = new AbortController();
  const response = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal });
  if (response.status !== 200) throw new Error(`stream answered ${response.status}`);
  let opened: () => void = () => {};
  const open = new Promise<void>((resolve) => {
    opened = resolve;
  });
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          if (block.startsWith(': stream open')) opened();
          const data = block.split('\n').find((line) => line.startsWith('data: '));
          if (!data) continue;
          const event = JSON.parse(data.slice(6)) as { data: { output: { n: number } } };
          arrived(String(event.data.output.n), performance.now());
        }
      }
    } catch {
      // Closed by the bench.
    }
  })();
  await open;
  return () => abort.abort();
}

/** Measures the event streams against `baseUrl` (an API of `service`); answers the markdown to print. */
export async function measureRunEvents(
  service: Service,
  baseUrl: string,
  options: { streams: number; events: number; rate: number },
): Promise<string> {
  const { runtime, provisioning } = service;
  const tenant = await provisioning.bootstrap({ name: 'weft-bench-run-events' });
  const scope = { workspaceId: tenant.workspace_id, userId: tenant.user_id };
  const newRun = async () =>
    (
      await runtime.uow(scope, async (m) =>
        insertExecution(m, {
          workspaceId: tenant.workspace_id,
          userId: tenant.user_id,
          agent: 'playbook',
          input: { steps: [] },
          principal: {
            userId: tenant.user_id,
            tenantId: tenant.tenant_id,
            scopes: ['runs:read'],
            credential: { kind: 'api_key', id: null, expiresAt: null },
          },
          idempotencyKey: null,
          requestHash: '0'.repeat(64),
        }),
      )
    )?.id;

  // Sent (the writing transaction begun) and arrived, per event number; several arrivals in the fan-out.
  const sent = new Map<string, number>();
  const arrivals = new Map<string, number[]>();
  const arrived = (key: string, at: number) => {
    const list = arrivals.get(key) ?? [];
    list.push(at);
    arrivals.set(key, list);
  };
  const commit = async (executionId: string, n: number) => {
    sent.set(String(n), performance.now());
    await runtime.uow(scope, (m) =>
      recordRunEvent(m, executionId, {
        type: 'step.completed',
        data: { step_no: n, step_id: executionId, tool: 'bench.step', output: { n }, credits_charged: 0 },
      }),
    );
  };
  const settle = async (expected: number) => {
    const deadline = Date.now() + 30_000;
    const received = () => [...arrivals.values()].reduce((sum, list) => sum + list.length, 0);
    while (received() < expected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  };
  const latencies = () => {
    const samples: number[] = [];
    for (const [key, at] of arrivals) for (const time of at) samples.push(time - sent.get(key)!);
    sent.clear();
    arrivals.clear();
    return samples;
  };

  // 1. One run per stream.
  const runs: string[] = [];
  for (let i = 0; i < options.streams; i++) runs.push((await newRun())!);
  let closers = await Promise.all(
    runs.map((id) => openStream(`${baseUrl}/v1/runs/${id}/events`, tenant.api_key, arrived)),
  );
  // Paced at `rate` commits a second over the runs in turn (saturating the writers would measure a queue).
  const writes: Promise<void>[] = [];
  const started = performance.now();
  for (let n = 0; n < options.events; n++) {
    const due = started + (n * 1000) / options.rate - performance.now();
    if (due > 0) await new Promise((resolve) => setTimeout(resolve, due));
    writes.push(commit(runs[n % runs.length]!, n));
  }
  await Promise.all(writes);
  await settle(options.events);
  const spread = figures(`${options.streams} streams, one run each (${options.rate} commits/s)`, latencies());
  for (const close of closers) close();

  // 2. Every stream on one run.
  const shared = (await newRun())!;
  closers = await Promise.all(
    runs.map(() => openStream(`${baseUrl}/v1/runs/${shared}/events`, tenant.api_key, arrived)),
  );
  const fanEvents = Math.max(20, Math.floor(options.events / 10));
  for (let n = 0; n < fanEvents; n++) {
    await commit(shared, n);
    // One event at a time, as a run's steps come: each is delivered before the next is written.
    await settle((n + 1) * options.streams);
  }
  await settle(fanEvents * options.streams);
  const fanOut = figures(`${options.streams} streams on one run (each event × ${options.streams})`, latencies());
  for (const close of closers) close();

  // The anchor: a bare LISTEN/NOTIFY round trip on two connections of this process.
  const listener = new Client({ connectionString: service.config.DATABASE_URL });
  const notifier = new Client({ connectionString: service.config.DATABASE_URL });
  await listener.connect();
  await notifier.connect();
  await listener.query('LISTEN bench_anchor');
  const anchorSent = new Map<string, number>();
  const anchorSamples: number[] = [];
  listener.on('notification', (message) => {
    anchorSamples.push(performance.now() - anchorSent.get(message.payload!)!);
  });
  for (let n = 0; n < options.events; n++) {
    anchorSent.set(String(n), performance.now());
    await notifier.query('BEGIN');
    await notifier.query(`SELECT pg_notify('bench_anchor', $1)`, [String(n)]);
    await notifier.query('COMMIT');
    await new Promise((resolve) => setImmediate(resolve));
  }
  const deadline = Date.now() + 10_000;
  while (anchorSamples.length < options.events && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await listener.end();
  await notifier.end();
  const anchor = figures('anchor: bare LISTEN/NOTIFY, BEGIN → notified', anchorSamples);

  const row = (f: Figures, ratio: boolean) =>
    `| ${f.name} | ${f.count} | ${f.p50.toFixed(2)} | ${f.p95.toFixed(2)} | ${f.p99.toFixed(2)} | ` +
    `${ratio ? (f.p95 / anchor.p95).toFixed(1) : '–'} |`;
  return [
    `\n## Run event streams: a step's event written → at the SSE client (ms)\n`,
    '| measured | events | p50 | p95 | p99 | p95 ÷ anchor p95 |',
    '|---|---|---|---|---|---|',
    row(anchor, false),
    row(spread, true),
    row(fanOut, true),
    `\nGoal: p95 ≤ 50 ms at 100 streams. ${spread.p95 <= 50 && fanOut.p95 <= 50 ? 'Met' : 'NOT met'} here.`,
  ].join('\n');
}

export async function run(args: string[]): Promise<void> {
  const streams = numberOption(args, 'streams', 100);
  const events = numberOption(args, 'events', 400);
  const rate = numberOption(args, 'rate', 100);
  const service = await bootBenchService({ queue: 'weft-bench-run-events' });
  const { server, url } = await serveLocally(createApp(service.runtime));
  try {
    console.log(await measureRunEvents(service, url, { streams, events, rate }));
  } finally {
    server.close();
    server.closeAllConnections();
    await service.stop();
  }
}
