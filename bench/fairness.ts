/**
 * `npm run bench -- fairness [--flood 500] [--runs 5] [--rounds 3] [--fairness on|off] [--trace]
 *   [--dynamic-config key=value,…] [--temporal dev|cluster] [--workers 1] [--workflow-tasks 4]`
 *
 * Issue 43 item 1: another workspace's runs while one workspace floods the task queue. On a private
 * Temporal dev server (`npm start`'s dispatch settings, `matching.enableFairness` among them, and one
 * task-queue partition) with the worker in a process of its own (WORKER_MAX_ACTIVITIES 10,
 * WORKER_MAX_WORKFLOW_TASKS 4, as test/runs-fairness.test.ts) and the API in this one, over HTTP:
 * - the anchor: workspace B dispatches `--runs` one-step runs at once on an idle service, `--rounds`
 *   times; their start delay (dispatch → first step started, the database's clock), p50 and p95;
 * - workspace A dispatches `--flood` one-step runs (32 requests in flight), then B its `--runs` again:
 *   B's start delay under the flood and its ratio to the anchor (issue 43's goal: p95 ≤ 2×), and how
 *   many of A's runs were still waiting once B's had started;
 * - then how fast A's flood drained: its runs finished per second, from its first dispatch to its last end.
 * `--fairness off` starts the dev server without fairness (first come, first served), for comparison.
 * `--dynamic-config` adds to the dev server's (its partitions, say). `--temporal cluster` runs on `npm run
 * cluster`'s Temporal instead (two matching hosts; the bench's queue has Temporal's default 4 partitions).
 * `--workers` forks that many worker processes, each with `--workflow-tasks` slots (the SDK's default: 0).
 * `--trace` prints where each of B's runs under the flood spent its start delay, from its workflow's history.
 * Data goes into weft_bench; each run makes its own tenants.
 */

import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import type { DataSource } from 'typeorm';
import { createApp } from '../src/app/http';
import { ensureSearchAttributes } from '../src/platform/temporal/connection';
import { runWorkflowId } from '../src/runs/workflow';
import { numberOption, percentile, stringOption } from './lib/measure';
import { forkWorker } from './lib/run-worker';
import { bootBenchService, serveLocally } from './lib/servers';
import { temporalKinds, useCluster } from './lib/temporal-target';

const ONE_STEP = JSON.stringify({ agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance' }] } });

export async function run(args: string[]): Promise<void> {
  const flood = numberOption(args, 'flood', 500);
  const runs = numberOption(args, 'runs', 5);
  const rounds = numberOption(args, 'rounds', 3);
  const fairness = stringOption(args, 'fairness') !== 'off';
  const trace = args.includes('--trace');
  const workers = numberOption(args, 'workers', 1);
  const workflowTasks = numberOption(args, 'workflow-tasks', 4);
  const [kind, ...more] = temporalKinds(args);
  if (more.length > 0 || (kind === 'cluster' && !fairness)) throw new Error('--temporal dev or cluster, fairness on');
  const settings: Record<string, string> = { TEMPORAL_NAMESPACE: 'default', WORKER_MAX_ACTIVITIES: '10' };
  if (workflowTasks > 0) settings.WORKER_MAX_WORKFLOW_TASKS = String(workflowTasks);
  const cluster = kind === 'cluster' ? await useCluster((line) => console.error(line)) : undefined;
  const service = await bootBenchService({
    queue: 'weft-bench-fairness',
    settings,
    temporalSettings: [
      ...(fairness ? [] : ['matching.enableFairness=false']),
      ...(stringOption(args, 'dynamic-config')?.split(',') ?? []),
    ],
    ...(cluster ? { temporal: cluster } : {}),
  });
  const { runtime, owner, provisioning, env } = service;
  await ensureSearchAttributes(runtime.temporal);
  // The worker process serves the runs bench's anchor queue too; nothing is started on it here.
  env.BENCH_ANCHOR_TASK_QUEUE = `${env.TEMPORAL_TASK_QUEUE}-anchor`;
  const forked = await Promise.all(Array.from({ length: workers }, () => forkWorker(env)));
  const { server, url } = await serveLocally(createApp(runtime));
  const [a, b] = [
    await provisioning.bootstrap({ credits: 1_000_000 }),
    await provisioning.bootstrap({ credits: 1_000_000 }),
  ];

  const post = async (key: string): Promise<string> => {
    const response = await fetch(`${url}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: ONE_STEP,
    });
    if (response.status === 503) return post(key);
    if (response.status !== 202) throw new Error(`dispatch answered ${response.status}: ${await response.text()}`);
    return ((await response.json()) as { execution_id: string }).execution_id;
  };
  const dispatch = async (key: string, count: number, inFlight = count): Promise<string[]> => {
    const ids: string[] = [];
    let left = count;
    await Promise.all(
      Array.from({ length: Math.min(inFlight, count) }, async () => {
        while (left-- > 0) ids.push(await post(key));
      }),
    );
    return ids;
  };
  const delays = async (ids: string[]): Promise<number[]> => {
    const deadline = Date.now() + 600_000;
    while (Date.now() < deadline) {
      const rows: { started: Date | null; created: Date }[] = await owner.query(
        `SELECT e.created_at AS created, min(s.started_at) AS started FROM run_executions e
           JOIN run_steps s ON s.execution_id = e.id WHERE e.id = ANY($1) GROUP BY e.id, e.created_at`,
        [ids],
      );
      if (rows.length === ids.length && rows.every((row) => row.started)) {
        return rows.map((row) => row.started!.getTime() - row.created.getTime()).sort((x, y) => x - y);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error('runs did not start within 10 minutes');
  };
  const queued = async (workspaceId: string) =>
    Number(
      (
        await owner.query(`SELECT count(*) AS n FROM run_executions WHERE workspace_id = $1 AND status = 'QUEUED'`, [
          workspaceId,
        ])
      )[0].n,
    );

  const unfinished = async (workspaceId: string) =>
    Number(
      (
        await owner.query(`SELECT count(*) AS n FROM run_executions WHERE workspace_id = $1 AND finished_at IS NULL`, [
          workspaceId,
        ])
      )[0].n,
    );

  try {
    await delays(await dispatch(b.api_key, runs)); // warm-up
    const alone: number[] = [];
    for (let round = 0; round < rounds; round++) alone.push(...(await delays(await dispatch(b.api_key, runs))));
    alone.sort((x, y) => x - y);
    const began = Date.now();
    await dispatch(a.api_key, flood, 32);
    const dispatchedIn = Date.now() - began;
    const backlog = await queued(a.workspace_id);
    const bUnder = await dispatch(b.api_key, runs);
    const under = await delays(bUnder);
    const left = await queued(a.workspace_id);
    if (trace) for (const id of bUnder) console.log(await startTrace(runtime.temporal.client, owner, id));
    const row = (name: string, values: number[]) =>
      `| ${name} | ${values.length} | ${percentile(values, 50).toFixed(0)} | ${percentile(values, 95).toFixed(0)} |`;
    console.log(
      `fairness ${fairness ? 'on' : 'off'} on the ${kind} server; ${workers} worker(s) of ` +
        `${workflowTasks || "the SDK's"} workflow-task slots; A's ${flood} dispatches took ${dispatchedIn} ms`,
    );
    console.log('| B start delay | runs | p50 ms | p95 ms |\n|---|---|---|---|');
    console.log(row('alone (anchor)', alone));
    console.log(row(`under A's flood of ${flood}`, under));
    console.log(
      `p95 under the flood ÷ alone: ×${(percentile(under, 95) / percentile(alone, 95)).toFixed(2)} (goal ≤ 2); ` +
        `A had ${backlog} runs QUEUED when B dispatched, ${left} still once B's had started`,
    );
    // What the fairness costs the flood: its runs finished per second, from its first dispatch to its last end.
    const drainDeadline = Date.now() + 600_000;
    while ((await unfinished(a.workspace_id)) > 0) {
      if (Date.now() > drainDeadline) throw new Error("A's flood did not finish within 10 minutes");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const [span] = await owner.query(
      `SELECT extract(epoch FROM max(finished_at) - min(created_at)) AS seconds FROM run_executions
        WHERE workspace_id = $1`,
      [a.workspace_id],
    );
    const seconds = Number(span.seconds);
    console.log(
      `A's flood: ${flood} runs finished in ${seconds.toFixed(1)} s (${(flood / seconds).toFixed(1)} runs/s)`,
    );
  } finally {
    server.close();
    await Promise.all(forked.map((worker) => worker.stop()));
    await service.stop();
    await cluster?.release();
  }
}

/**
 * Where a run's start delay went, from its workflow's history: ms after the dispatch's commit (the database's
 * clock) of each event, up to its first activity's start.
 */
async function startTrace(client: Client, owner: DataSource, executionId: string): Promise<string> {
  const [{ created }] = await owner.query('SELECT created_at AS created FROM run_executions WHERE id = $1', [
    executionId,
  ]);
  const history = await client.workflow.getHandle(runWorkflowId(executionId)).fetchHistory();
  const marks: string[] = [];
  for (const event of history.events ?? []) {
    const at = tsToMs(event.eventTime) - (created as Date).getTime();
    const type = temporal.api.enums.v1.EventType[event.eventType ?? 0]?.replace('EVENT_TYPE_', '').toLowerCase();
    marks.push(`${type} ${at}`);
    if (event.activityTaskStartedEventAttributes) break;
  }
  return `  ${executionId.slice(0, 8)}: ${marks.join(' → ')}`;
}
