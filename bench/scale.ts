/**
 * `npm run bench -- scale [--seconds 4] [--clients 12] [--workers 1,2,3] [--apis 1,2] [--pool 6]
 *   [--temporal dev|cluster|both]`
 *
 * More than one process, measured (issue 29 item 4): one private Temporal dev server (a free port,
 * `npm start`'s dispatch settings), one Postgres database (weft_bench), and for each shape N API processes
 * and M worker processes (`WEFT_PROCESS=api|worker node main.ts`, real processes as docker-compose.yml runs
 * them; test/helpers/weft-process.ts starts them). HTTP clients in this process dispatch 3-step playbook runs
 * round robin over the APIs (what the load balancer does) and wait for SUCCEEDED: throughput and p50/p95 per
 * shape, each beside the 1 API × 1 worker shape of the same run (the anchor, as a ratio). Every shape gets a
 * task queue and a workspace of its own and fresh processes; at the end of each, correctness from the
 * database: every dispatched run exists once and SUCCEEDED with its 3 steps, every charge is in the ledger
 * once (one `ontology.search.hybrid` debit per run, no refund) and the tenant's balance agrees.
 * `--seconds` keeps a run short (about 6 × (seconds + ~20 s of process start) in all).
 *
 * `--temporal cluster` runs the same matrix on the multi-process Temporal cluster of `npm run cluster` (issue 44
 * item 5; brought up by bench/lib/temporal-target.ts and left as found), `both` on the dev server and the cluster
 * shape by shape, printed side by side with cluster ÷ dev ratios. Each shape also reports where the CPU went
 * (the machine's busy share; core-ms per run of Weft's processes, Temporal's, Postgres's) to say what limits it.
 */

import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import os from 'node:os';
import type { Client } from '@temporalio/client';
import type { WeftProcess } from '../test/helpers/weft-process';
import { startApiProcess, startWorkerProcess } from '../test/helpers/weft-process';
import type { CpuUse } from './lib/cpu';
import { cpuWindow, postgresBackends } from './lib/cpu';
import type { Measurement } from './lib/measure';
import { measure, numberOption } from './lib/measure';
import { runResult } from './lib/run-worker';
import { bootBenchService } from './lib/servers';
import type { TemporalKind } from './lib/temporal-target';
import { temporalKinds, useCluster } from './lib/temporal-target';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const listOption = (args: string[], name: string, fallback: number[]) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1]!.split(',').map(Number) : fallback;
};

/** SIGTERM (main.ts drains the worker and closes the server), SIGKILL after 15 s. */
async function stopProcess(process: WeftProcess): Promise<void> {
  const { child } = process;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** Resolves once `count` distinct workers poll the queue's workflow and activity tasks. */
async function pollersReady(client: Client, queue: string, count: number, workers: WeftProcess[]) {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const pollers = await Promise.all(
      [1, 2].map(async (taskQueueType) => {
        const answer = await client.workflowService.describeTaskQueue({
          namespace: client.options.namespace,
          taskQueue: { name: queue, kind: 1 },
          taskQueueType,
        });
        return new Set((answer.pollers ?? []).map((poller) => poller.identity)).size;
      }),
    );
    if (pollers.every((n) => n >= count)) return;
    const dead = workers.find((worker) => worker.child.exitCode !== null);
    if (dead) throw new Error(`a worker process exited:\n${dead.output()}`);
    if (Date.now() > deadline) throw new Error(`${count} workers did not poll ${queue} within 180 s`);
    await sleep(250);
  }
}

interface ShapeResult {
  temporal: TemporalKind;
  apis: number;
  workers: number;
  measurement: Measurement;
  runs: number;
  problems: string[];
  cpu: CpuUse;
}

const CREDITS = 1_000_000;
const STEPS = [
  { tool: 'ontology.search', input: { query: 'scale' } },
  { tool: 'billing.credits_balance' },
  { tool: 'billing.credits_balance' },
];

type BenchService = Awaited<ReturnType<typeof bootBenchService>>;
interface ShapeOptions {
  seconds: number;
  clients: number;
  poolSize: string;
}

/** One shape on one Temporal: fresh processes, a queue and a workspace of its own, measured, then checked. */
async function runShape(
  temporal: TemporalKind,
  service: BenchService,
  apis: number,
  workers: number,
  options: ShapeOptions,
): Promise<ShapeResult> {
  const { env, owner, provisioning, runtime } = service;
  const { client } = runtime.temporal;
  const queue = `weft-bench-scale-${apis}x${workers}-${randomUUID().slice(0, 8)}`;
  const processEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) processEnv[key] = value;
  Object.assign(processEnv, {
    DATABASE_POOL_SIZE: options.poolSize,
    DATABASE_WORKER_POOL_SIZE: options.poolSize,
    TEMPORAL_TASK_QUEUE: queue,
  });
  const tenant = await provisioning.bootstrap({ name: `weft-bench-scale-${apis}x${workers}`, credits: CREDITS });
  const workerProcesses = Array.from({ length: workers }, () => startWorkerProcess(processEnv));
  const apiProcesses: WeftProcess[] = [];
  try {
    apiProcesses.push(...(await Promise.all(Array.from({ length: apis }, () => startApiProcess(processEnv)))));
    await pollersReady(client, queue, workers, workerProcesses);

    const dispatched: string[] = [];
    let turn = 0;
    const playbook = async () => {
      const api = apiProcesses[turn++ % apiProcesses.length]!;
      const response = await fetch(`${api.baseUrl}/v1/runs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ agent: 'playbook', input: { steps: STEPS } }),
      });
      const text = await response.text();
      if (response.status !== 202) throw new Error(`POST /v1/runs answered ${response.status}: ${text}`);
      const executionId: string = JSON.parse(text).execution_id;
      dispatched.push(executionId);
      const result = await runResult(client, executionId);
      if (result.status !== 'SUCCEEDED') throw new Error(`run ${executionId} ended ${result.status}`);
    };
    const window = cpuWindow({
      weft: () => [...apiProcesses, ...workerProcesses].map((each) => each.child.pid ?? 0).filter(Boolean),
      temporal: service.temporalPids,
      postgres: () => postgresBackends([service.database]),
      temporalPostgres: () => postgresBackends(service.temporalDatabases),
      bench: () => [process.pid],
    });
    const measurement = await measure(`${apis} API × ${workers} worker`, playbook, {
      concurrency: options.clients,
      durationMs: options.seconds * 1000,
      warmupMs: 1000,
    });
    const cpu = window.stop();
    const problems = await checkCorrectness(owner, tenant, dispatched);
    console.error(
      `${temporal}: ${apis} API × ${workers} worker: ${measurement.rps.toFixed(1)} runs/s, ` +
        `p95 ${measurement.p95.toFixed(0)} ms, ${dispatched.length} runs, ` +
        `machine ${(cpu.machineBusy * 100).toFixed(0)} % busy, ${problems.length} problems`,
    );
    return { temporal, apis, workers, measurement, runs: dispatched.length, problems, cpu };
  } finally {
    await Promise.all([...apiProcesses, ...workerProcesses].map(stopProcess));
  }
}

export async function run(args: string[]): Promise<void> {
  const seconds = numberOption(args, 'seconds', 4);
  const clients = numberOption(args, 'clients', 12);
  const workerCounts = listOption(args, 'workers', [1, 2, 3]);
  const apiCounts = listOption(args, 'apis', [1, 2]);
  // Each process's pool: 5 processes × 2 pools' worth must fit beside the other benches' and tests'.
  const poolSize = String(numberOption(args, 'pool', 6));
  const kinds = temporalKinds(args);

  const cluster = kinds.includes('cluster') ? await useCluster((line) => console.error(line)) : undefined;
  const services = new Map<TemporalKind, BenchService>();
  const results: ShapeResult[] = [];
  try {
    for (const kind of kinds) {
      const temporal = kind === 'cluster' ? cluster : undefined;
      services.set(kind, await bootBenchService({ queue: 'weft-bench-scale', ...(temporal ? { temporal } : {}) }));
    }
    // Shape by shape, each on every Temporal in turn: both see the same spell of the machine's load.
    for (const apis of apiCounts) {
      for (const workers of workerCounts) {
        for (const kind of kinds) {
          results.push(await runShape(kind, services.get(kind)!, apis, workers, { seconds, clients, poolSize }));
        }
      }
    }
  } finally {
    for (const service of services.values()) await service.stop();
    await cluster?.release();
  }

  for (const kind of kinds)
    printShapes(
      kind,
      results.filter((r) => r.temporal === kind),
      { seconds, clients, poolSize },
    );
  if (kinds.length === 2) printSideBySide(results);
  printCpu(results);
  if (results.some((r) => r.problems.length)) throw new Error('correctness check failed (see the table)');
}

const TEMPORAL_NAMES: Record<TemporalKind, string> = {
  dev: 'the Temporal dev server (one process, SQLite in memory)',
  cluster: 'the Temporal cluster (`npm run cluster`: frontend, 2 history, 2 matching, worker; Postgres)',
};

function printShapes(kind: TemporalKind, results: ShapeResult[], options: ShapeOptions) {
  const anchor = results[0]!.measurement;
  const first = results[0]!;
  console.log(
    `\n## Scale-out on ${TEMPORAL_NAMES[kind]}: ${options.seconds} s per shape, ${options.clients} clients\n`,
  );
  console.log(
    `Anchor: the ${first.apis} API × ${first.workers} worker shape of this run. ` +
      `Each process's database pool: ${options.poolSize}. Machine: ${os.cpus().length} cores.\n`,
  );
  console.log(
    '| APIs | workers | runs/s | ÷ anchor | p50 ms | p95 ms | p95 ÷ anchor | runs checked | correctness |\n' +
      '|---|---|---|---|---|---|---|---|---|',
  );
  for (const r of results) {
    const m = r.measurement;
    console.log(
      `| ${r.apis} | ${r.workers} | ${m.rps.toFixed(1)} | ${(m.rps / anchor.rps).toFixed(2)} | ${m.p50.toFixed(0)} | ` +
        `${m.p95.toFixed(0)} | ${(m.p95 / anchor.p95).toFixed(2)} | ${r.runs} | ` +
        `${r.problems.length ? r.problems.join('; ') : 'every run once, every charge once'} |`,
    );
  }
}

/** The cluster beside the dev server, shape by shape: the dev server's figures are the anchor. */
function printSideBySide(results: ShapeResult[]) {
  console.log('\n## The cluster beside the dev server, same run (ratio = cluster ÷ dev)\n');
  console.log(
    '| APIs | workers | dev runs/s | cluster runs/s | runs/s ratio | dev p50 / p95 ms | cluster p50 / p95 ms | ' +
      'p50 ratio | p95 ratio |\n|---|---|---|---|---|---|---|---|---|',
  );
  for (const dev of results.filter((r) => r.temporal === 'dev')) {
    const cluster = results.find((r) => r.temporal === 'cluster' && r.apis === dev.apis && r.workers === dev.workers);
    if (!cluster) continue;
    const [d, c] = [dev.measurement, cluster.measurement];
    console.log(
      `| ${dev.apis} | ${dev.workers} | ${d.rps.toFixed(1)} | ${c.rps.toFixed(1)} | ${(c.rps / d.rps).toFixed(2)} | ` +
        `${d.p50.toFixed(0)} / ${d.p95.toFixed(0)} | ${c.p50.toFixed(0)} / ${c.p95.toFixed(0)} | ` +
        `${(c.p50 / d.p50).toFixed(2)} | ${(c.p95 / d.p95).toFixed(2)} |`,
    );
  }
}

/** Where each shape's CPU went: the machine's busy share and core-ms per run by component. */
function printCpu(results: ShapeResult[]) {
  console.log(
    "\n## Where the CPU went (per run: CPU of the window ÷ runs in it; Postgres: the backends of Weft's and of " +
      "Temporal's databases)\n\n| Temporal | APIs | workers | machine busy | Weft core-ms/run | " +
      "Temporal core-ms/run | Weft's Postgres core-ms/run | Temporal's Postgres core-ms/run | bench core-ms/run |\n" +
      '|---|---|---|---|---|---|---|---|---|',
  );
  for (const r of results) {
    const perRun = (group: string) => ((r.cpu.seconds[group]! * 1000) / Math.max(1, r.runs)).toFixed(0);
    console.log(
      `| ${r.temporal} | ${r.apis} | ${r.workers} | ${(r.cpu.machineBusy * 100).toFixed(0)} % | ${perRun('weft')} | ` +
        `${perRun('temporal')} | ${perRun('postgres')} | ${perRun('temporalPostgres')} | ${perRun('bench')} |`,
    );
  }
}

/**
 * What the database holds for one shape's workspace: each dispatched run once, SUCCEEDED, its 3 steps
 * SUCCEEDED; one search debit per run and no refund; the tenant's balance the grant minus those debits.
 */
async function checkCorrectness(
  owner: { query(sql: string, params?: unknown[]): Promise<Record<string, string | number>[]> },
  tenant: { workspace_id: string; tenant_id: string },
  dispatched: string[],
): Promise<string[]> {
  const problems: string[] = [];
  const unique = new Set(dispatched);
  if (unique.size !== dispatched.length) problems.push(`${dispatched.length - unique.size} ids answered twice`);
  const [executions] = await owner.query(
    `SELECT count(*)::int AS total, count(*) FILTER (WHERE status = 'SUCCEEDED')::int AS succeeded,
            count(*) FILTER (WHERE id = ANY($2::uuid[]))::int AS known
       FROM run_executions WHERE workspace_id = $1`,
    [tenant.workspace_id, [...unique]],
  );
  if (executions!.total !== unique.size || executions!.known !== unique.size) {
    problems.push(`${executions!.total} executions stored for ${unique.size} dispatched`);
  }
  if (executions!.succeeded !== unique.size) problems.push(`${executions!.succeeded} SUCCEEDED of ${unique.size}`);
  const [steps] = await owner.query(
    `SELECT count(*)::int AS total, count(*) FILTER (WHERE status = 'SUCCEEDED')::int AS succeeded,
            count(DISTINCT (execution_id, step_no))::int AS distinct_steps
       FROM run_steps WHERE workspace_id = $1`,
    [tenant.workspace_id],
  );
  const expectedSteps = unique.size * 3;
  if (steps!.total !== expectedSteps || steps!.distinct_steps !== expectedSteps || steps!.succeeded !== expectedSteps) {
    problems.push(`${steps!.total} steps (${steps!.succeeded} SUCCEEDED) for ${expectedSteps}`);
  }
  const [ledger] = await owner.query(
    `SELECT count(*) FILTER (WHERE amount < 0)::int AS debits, count(*) FILTER (WHERE amount > 0)::int AS refunds,
            coalesce(sum(amount), 0)::int AS net
       FROM credit_ledger WHERE workspace_id = $1 AND kind = 'ontology.search.hybrid'`,
    [tenant.workspace_id],
  );
  if (ledger!.debits !== unique.size || ledger!.refunds !== 0 || ledger!.net !== -unique.size) {
    problems.push(`${ledger!.debits} debits, ${ledger!.refunds} refunds, net ${ledger!.net} for ${unique.size} runs`);
  }
  const [balance] = await owner.query(`SELECT credit_balance::int AS balance FROM tenants WHERE id = $1`, [
    tenant.tenant_id,
  ]);
  if (balance!.balance !== CREDITS - unique.size) {
    problems.push(`balance ${balance!.balance}, expected ${CREDITS - unique.size}`);
  }
  return problems;
}
