/**
 * `npm run bench -- runs [--seconds 4] [--clients 1,4] [--samples 15] [--round-trips 40] [--waiting 1000]`
 *
 * Agent runs, on a private Temporal dev server (a free port, `npm start`'s dispatch settings) with
 * the worker in a process of its own (bench/lib/worker-process.ts), the API and the HTTP clients
 * in this one:
 * - dispatch → SUCCEEDED of a 3-step playbook of free reads (`billing.credits_balance` × 3) over
 *   HTTP, waiting on the workflow's result, interleaved with two anchors: a bare workflow with three
 *   no-op activities started by the Temporal client (goal at 4 clients: req/s ≥ 0.8×, p50 ≤ 1.25×),
 *   and the floor, a hand-written durable run of the same 3 reads (bench/anchors/floor-api.ts: bare
 *   Koa, one `pg.Pool`, the same Temporal client and worker process): the API key looked up by its
 *   hash, the run and step rows committed, the workflow started, 202; each step an activity that
 *   commits RUNNING, reads the tenant's balance, then commits SUCCEEDED with its output and an event
 *   row (the last step the run's SUCCEEDED too), in scratch tables of the bench (`bench_floor_*`).
 *   It runs as the owner role (no RLS, no workspace setting), so it is a floor without isolation;
 * - where the time goes: the phases of sample runs, the floor's and anchors, from their history's
 *   timestamps;
 * - the approval round trip: resolve answered 200 → run SUCCEEDED (p50, p95);
 * - N runs waiting for approval at once: the worker process's RSS and heap, and the time to resolve
 *   them all;
 * - the run event streams, `bench/run-events.ts` (`--streams 100 --events 400`): commit → SSE client.
 * Data goes into weft_bench; each run makes its own tenants.
 */

import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { Pool } from 'pg';
import { createApp } from '../src/app/http';
import { ensureSearchAttributes } from '../src/platform/temporal/connection';
import { runWorkflowId } from '../src/runs/workflow';
import { createFloorApi, floorWorkflowId } from './anchors/floor-api';
import { FLOOR_TABLES } from './anchors/floor-tables';
import type { Measurement } from './lib/measure';
import { markdownTable, measure, numberOption, percentile } from './lib/measure';
import { forkWorker, runResult } from './lib/run-worker';
import { bootBenchService, serveLocally } from './lib/servers';
import { measureRunEvents } from './run-events';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

type Phases = Record<string, number>;

// History event types (temporal.api.enums.v1.EventType) that the breakdown reads.
const EVENT = {
  started: 1,
  completed: 2,
  taskScheduled: 5,
  taskCompleted: 7,
  activityScheduled: 10,
  activityStarted: 11,
  activityCompleted: 12,
} as const;

/**
 * One execution's time split into phases: until the server started it (for a run: the HTTP
 * dispatch, its transaction and the outbox relay's start), activity tasks waiting for a worker,
 * activities running (by type), workflow tasks, and the result's way back to the client.
 */
async function phasesOf(
  client: Client,
  workflowId: string,
  sentAt: number,
  resultAt: number,
  answeredAt?: number,
): Promise<Phases> {
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const time = (event: (typeof events)[number]) =>
    Number(event.eventTime?.seconds ?? 0) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;
  const byId = new Map(events.map((event) => [Number(event.eventId), event]));
  const phases: Phases = {};
  const add = (phase: string, ms: number) => {
    phases[phase] = (phases[phase] ?? 0) + ms;
  };
  if (answeredAt !== undefined) add('HTTP dispatch answered 202', answeredAt - sentAt);
  let tasks = 0;
  for (const event of events) {
    const type = Number(event.eventType);
    if (type === EVENT.started) add('request sent → workflow started', time(event) - sentAt);
    if (type === EVENT.completed) add('workflow completed → result at the client', resultAt - time(event));
    if (type === EVENT.taskCompleted) {
      const scheduled = byId.get(Number(event.workflowTaskCompletedEventAttributes?.scheduledEventId));
      if (scheduled) add('workflow tasks, scheduled → completed (sum)', time(event) - time(scheduled));
      tasks += 1;
    }
    if (type === EVENT.activityStarted) {
      const scheduled = byId.get(Number(event.activityTaskStartedEventAttributes?.scheduledEventId));
      if (scheduled) add('activity tasks, scheduled → started (sum)', time(event) - time(scheduled));
    }
    if (type === EVENT.activityCompleted) {
      const scheduledId = Number(event.activityTaskCompletedEventAttributes?.scheduledEventId);
      const scheduled = byId.get(scheduledId);
      const started = events.find(
        (candidate) =>
          Number(candidate.eventType) === EVENT.activityStarted &&
          Number(candidate.activityTaskStartedEventAttributes?.scheduledEventId) === scheduledId,
      );
      const name = scheduled?.activityTaskScheduledEventAttributes?.activityType?.name ?? '?';
      if (started) add(`activity ${name}, started → completed (sum)`, time(event) - time(started));
    }
  }
  add('workflow tasks (count)', tasks);
  add('total', resultAt - sentAt);
  return phases;
}

/** Runs `work(i)` for i in [0, count) from `concurrency` loops. */
async function pool(count: number, concurrency: number, work: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

export async function run(args: string[]): Promise<void> {
  const seconds = numberOption(args, 'seconds', 4);
  const clientsAt = args.indexOf('--clients');
  const clientCounts = clientsAt >= 0 ? args[clientsAt + 1]!.split(',').map(Number) : [1, 4];
  const roundTrips = numberOption(args, 'round-trips', 40);
  const waiting = numberOption(args, 'waiting', 1000);
  const breakdownSamples = numberOption(args, 'samples', 15);

  const service = await bootBenchService({ queue: 'weft-bench-runs', settings: { TEMPORAL_NAMESPACE: 'default' } });
  const { env, runtime, owner, provisioning } = service;
  env.BENCH_ANCHOR_TASK_QUEUE = `${env.TEMPORAL_TASK_QUEUE}-anchor`;
  await ensureSearchAttributes(runtime.temporal);
  const tenant = await provisioning.bootstrap({ name: 'weft-bench-runs' });
  const workers = await forkWorker(env);

  const { server, url: baseUrl } = await serveLocally(createApp(runtime));
  const { client } = runtime.temporal;
  // The floor's API, with a pool of Weft's API's size on the owner role: its plain SELECT of the API
  // key needs no RLS context (its activities have a pool of their own in the worker process).
  const floorPool = new Pool({
    connectionString: service.config.DATABASE_OWNER_URL,
    max: service.config.DATABASE_POOL_SIZE,
  });
  await floorPool.query(FLOOR_TABLES);
  const floorApi = await serveLocally(
    createFloorApi({ pool: floorPool, temporal: client, taskQueue: env.BENCH_ANCHOR_TASK_QUEUE }),
  );

  const postTo = async (base: string, token: string, path: string, body: unknown, expected: number) => {
    const response = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status !== expected) throw new Error(`${path} answered ${response.status}: ${text}`);
    return JSON.parse(text);
  };
  const post = (token: string, path: string, body: unknown, expected: number) =>
    postTo(baseUrl, token, path, body, expected);
  const dispatch = async (token: string, steps: unknown[]): Promise<string> =>
    (await post(token, '/v1/runs', { agent: 'playbook', input: { steps } }, 202)).execution_id;
  const succeeded = async (executionId: string) => {
    const result = await runResult(client, executionId);
    if (result.status !== 'SUCCEEDED') throw new Error(`run ${executionId} ended ${result.status}`);
  };

  const threeReads = Array.from({ length: 3 }, () => ({ tool: 'billing.credits_balance' }));
  const playbook = async () => succeeded(await dispatch(tenant.api_key, threeReads));
  const floorDispatch = async (): Promise<string> =>
    (await postTo(floorApi.url, tenant.api_key, '/runs', { steps: threeReads }, 202)).run_id;
  const floorSucceeded = async (runId: string) => {
    const status = await client.workflow.getHandle(floorWorkflowId(runId)).result();
    if (status !== 'SUCCEEDED') throw new Error(`floor run ${runId} ended ${status}`);
  };
  const floor = async () => floorSucceeded(await floorDispatch());
  const anchor = (activities: 'three' | 'five') => async () => {
    await client.workflow.execute(`${activities}ActivitiesAnchorWorkflow`, {
      workflowId: `anchor-${randomUUID()}`,
      taskQueue: env.BENCH_ANCHOR_TASK_QUEUE!,
      args: [],
    });
  };

  // 1. Dispatch → SUCCEEDED against the anchors, interleaved at each client count.
  const rows: { subject: Measurement; anchor?: Measurement }[] = [];
  const goals: string[] = [];
  for (const concurrency of clientCounts) {
    const options = { concurrency, durationMs: seconds * 1000 };
    const bare = await measure('workflow, 3 no-op activities (Temporal client)', anchor('three'), options);
    const shaped = await measure('workflow, 5 no-op activities (Temporal client)', anchor('five'), options);
    const handWritten = await measure('hand-written durable run, dispatch → SUCCEEDED (HTTP)', floor, options);
    const runs = await measure('3-step playbook, dispatch → SUCCEEDED (HTTP)', playbook, options);
    rows.push(
      { subject: bare },
      { subject: shaped, anchor: bare },
      { subject: handWritten, anchor: bare },
      { subject: runs, anchor: bare },
      { subject: runs, anchor: handWritten },
    );
    const ratios = (of: Measurement) => `${(runs.rps / of.rps).toFixed(2)} | ${(runs.p50 / of.p50).toFixed(2)}`;
    goals.push(
      `| ${concurrency} | ${ratios(bare)} | ${ratios(handWritten)} | ` +
        `${runs.p50.toFixed(1)} vs ${bare.p50.toFixed(1)} vs ${handWritten.p50.toFixed(1)} |`,
    );
  }

  // 2. Where the time goes: the median phases of sample runs, the floor's and the anchors, from
  // their event timestamps (the server's clock is this machine's).
  const samples = { run: [] as Phases[], floor: [] as Phases[], bare: [] as Phases[], shaped: [] as Phases[] };
  // Back to back, as the measurement above runs them; histories are read afterwards.
  const timed: { workflowId: string; sentAt: number; resultAt: number; answeredAt?: number }[] = [];
  const dispatched = [
    ['run', () => dispatch(tenant.api_key, threeReads), succeeded, runWorkflowId],
    ['floor', floorDispatch, floorSucceeded, floorWorkflowId],
  ] as const;
  for (const [key, dispatchOne, settled, workflowIdOf] of dispatched) {
    for (let i = 0; i < breakdownSamples; i++) {
      const sentAt = Date.now();
      const id = await dispatchOne();
      const answeredAt = Date.now();
      await settled(id);
      timed.push({ workflowId: workflowIdOf(id), sentAt, answeredAt, resultAt: Date.now() });
    }
    for (const t of timed.splice(0)) {
      samples[key].push(await phasesOf(client, t.workflowId, t.sentAt, t.resultAt, t.answeredAt));
    }
  }
  for (const [key, type] of [
    ['bare', 'threeActivitiesAnchorWorkflow'],
    ['shaped', 'fiveActivitiesAnchorWorkflow'],
  ] as const) {
    for (let i = 0; i < breakdownSamples; i++) {
      const workflowId = `anchor-${randomUUID()}`;
      const sentAt = Date.now();
      await client.workflow.execute(type, { workflowId, taskQueue: env.BENCH_ANCHOR_TASK_QUEUE!, args: [] });
      timed.push({ workflowId, sentAt, resultAt: Date.now() });
    }
    for (const t of timed.splice(0)) samples[key].push(await phasesOf(client, t.workflowId, t.sentAt, t.resultAt));
  }

  // 3. The approval round trip: resolve answered 200 → run SUCCEEDED.
  const approvalIdOf = async (executionId: string): Promise<string> => {
    for (;;) {
      const [row] = await owner.query(`SELECT id FROM run_approvals WHERE execution_id = $1 AND status = 'pending'`, [
        executionId,
      ]);
      if (row) return row.id;
      await sleep(5);
    }
  };
  const gated = [{ tool: 'billing.credits_balance', requires_approval: true }];
  const roundTripMs: number[] = [];
  const resolveMs: number[] = [];
  for (let i = 0; i < roundTrips; i++) {
    const executionId = await dispatch(tenant.api_key, gated);
    const approvalId = await approvalIdOf(executionId);
    const t0 = performance.now();
    await post(tenant.user_jwt, `/v1/approvals/${approvalId}/resolve`, { decision: 'APPROVED' }, 200);
    const t1 = performance.now();
    await succeeded(executionId);
    resolveMs.push(t1 - t0);
    roundTripMs.push(performance.now() - t0);
  }
  roundTripMs.sort((a, b) => a - b);
  resolveMs.sort((a, b) => a - b);

  // 4. N runs waiting for approval at once, in a workspace of their own.
  const crowd = await provisioning.bootstrap({ name: 'weft-bench-runs-waiting' });
  const before = await workers.memory();
  const dispatchStarted = performance.now();
  const waitingIds: string[] = [];
  await pool(waiting, 8, async () => {
    waitingIds.push(await dispatch(crowd.api_key, gated));
  });
  const countPending = async () =>
    Number(
      (
        await owner.query(
          `SELECT count(*) AS n FROM run_approvals a JOIN run_executions e ON e.id = a.execution_id
           WHERE a.workspace_id = $1 AND a.status = 'pending' AND e.status = 'AWAITING_APPROVAL'`,
          [crowd.workspace_id],
        )
      )[0].n,
    );
  while ((await countPending()) < waiting) await sleep(200);
  const allWaitingMs = performance.now() - dispatchStarted;
  const during = await workers.memory();

  const pending: { id: string }[] = await owner.query(
    `SELECT id FROM run_approvals WHERE workspace_id = $1 AND status = 'pending'`,
    [crowd.workspace_id],
  );
  const resolveStarted = performance.now();
  await pool(pending.length, 8, async (i) => {
    await post(crowd.user_jwt, `/v1/approvals/${pending[i]!.id}/resolve`, { decision: 'APPROVED' }, 200);
  });
  const resolvesAnsweredMs = performance.now() - resolveStarted;
  const countSucceeded = async () =>
    Number(
      (
        await owner.query(`SELECT count(*) AS n FROM run_executions WHERE workspace_id = $1 AND status = 'SUCCEEDED'`, [
          crowd.workspace_id,
        ])
      )[0].n,
    );
  while ((await countSucceeded()) < waiting) await sleep(100);
  const allSucceededMs = performance.now() - resolveStarted;
  const after = await workers.memory();

  console.log(`\n## Runs, ${seconds} s per point\n`);
  console.log(markdownTable(rows));
  console.log(
    '\n| clients | req/s ÷ bare workflow (goal ≥ 0.8) | p50 ÷ bare workflow (goal ≤ 1.25) | ' +
      'req/s ÷ hand-written durable run | p50 ÷ hand-written durable run | ' +
      'p50 ms, run vs bare workflow vs hand-written |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const line of goals) console.log(line);
  console.log(`\nWhere the time goes (median of ${breakdownSamples} of each, back to back at 1 client, ms):\n`);
  console.log(
    '| phase | 3-step run | floor: hand-written durable run | anchor: 3 no-op activities | ' +
      "anchor: 5 no-op activities (a run's shape) |\n|---|---|---|---|---|",
  );
  const phaseNames = [...new Set(Object.values(samples).flatMap((list) => list.flatMap((p) => Object.keys(p))))];
  for (const phase of phaseNames) {
    const cell = (list: Phases[]) => {
      const values = list.map((p) => p[phase]).filter((v): v is number => v !== undefined);
      return values.length
        ? percentile(
            values.sort((a, b) => a - b),
            50,
          ).toFixed(1)
        : '–';
    };
    console.log(
      `| ${phase} | ${cell(samples.run)} | ${cell(samples.floor)} | ${cell(samples.bare)} | ${cell(samples.shaped)} |`,
    );
  }
  console.log(
    `\nApproval round trip (resolve → SUCCEEDED), ${roundTrips} runs one at a time: ` +
      `p50 ${percentile(roundTripMs, 50).toFixed(1)} ms, p95 ${percentile(roundTripMs, 95).toFixed(1)} ms ` +
      `(the resolve request itself: p50 ${percentile(resolveMs, 50).toFixed(1)} ms, ` +
      `p95 ${percentile(resolveMs, 95).toFixed(1)} ms)`,
  );
  console.log(`\n${waiting} runs waiting for approval (dispatched by 8 clients, resolved by 8):\n`);
  console.log('| worker process | RSS MiB | heap used MiB |\n|---|---|---|');
  console.log(`| before dispatching them | ${mib(before.rssBytes)} | ${mib(before.heapUsedBytes)} |`);
  console.log(`| all ${waiting} waiting | ${mib(during.rssBytes)} | ${mib(during.heapUsedBytes)} |`);
  console.log(`| after resolving them all | ${mib(after.rssBytes)} | ${mib(after.heapUsedBytes)} |`);
  console.log(
    `\nWorkflow cache: ${during.maxCachedWorkflows} workflows (the worker's default). ` +
      `Dispatch until all ${waiting} wait: ${(allWaitingMs / 1000).toFixed(1)} s; ` +
      `all resolves answered: ${(resolvesAnsweredMs / 1000).toFixed(1)} s; ` +
      `all SUCCEEDED: ${(allSucceededMs / 1000).toFixed(1)} s after the first resolve.`,
  );

  // 5. The run event streams (issue 26): bench/run-events.ts, on this same service.
  console.log(
    await measureRunEvents(service, baseUrl, {
      streams: numberOption(args, 'streams', 100),
      events: numberOption(args, 'events', 400),
      rate: numberOption(args, 'rate', 100),
    }),
  );

  server.close();
  server.closeAllConnections();
  floorApi.server.close();
  floorApi.server.closeAllConnections();
  await floorPool.end();
  await workers.stop();
  await service.stop();
}
