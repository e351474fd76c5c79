import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { temporal as temporalProto } from '@temporalio/proto';
import { deleteMaintenanceSchedules } from '../../src/app/schedules';
import { eventually } from './eventually';
import type { FaultProxy } from './fault-proxy';
import { startFaultProxy, throughProxy } from './fault-proxy';
import { terminateTaskQueue } from './leftovers';
import type { WeftProcess } from './weft-process';
import { startApiProcess, startWorkerProcess } from './weft-process';

/**
 * Weft as separate processes — one API, `workers` workers on one task queue — that reach Postgres
 * and Temporal only through fault proxies, so a test can take either away without touching the
 * services themselves.
 */
export interface FaultStack {
  taskQueue: string;
  postgres: FaultProxy;
  /** The workers' way to Temporal. */
  temporal: FaultProxy;
  /** The API's way to Temporal, apart, so a test can stall only the API's calls (a signal after a commit). */
  apiTemporal: FaultProxy;
  api: WeftProcess;
  workers: WeftProcess[];
  /**
   * Worker processes that exited on their own, and why; each was started again after 2 s, as
   * docker compose's `restart: on-failure` does.
   */
  exits: string[];
  /** SIGKILLs worker `index` and starts another in its place. */
  replaceWorker(index: number): Promise<void>;
  /** SIGKILLs the API and starts another (on a new port: read `api.baseUrl` again). */
  replaceApi(): Promise<void>;
  stop(): Promise<void>;
}

export interface FaultStackOptions {
  /** The database URLs and Temporal address the processes would use without the proxies. */
  databaseUrl: string;
  databaseOwnerUrl: string;
  temporalAddress: string;
  /**
   * A client of that Temporal server: cleans the task queue up at the end. A function when the test
   * kills that server (its connection closes with it): asked again when needed.
   */
  temporalClient: Client | (() => Promise<Client>);
  workers?: number;
  /** Task queue prefix (the suite's end check counts `weft-durability-` ones as its own). */
  queuePrefix?: string;
  env?: Record<string, string>;
}

// A waiting run re-reads its approval this often here (60 s in production), so that re-reads fall
// inside an outage as they would over a long wait, and a lost signal costs seconds, not a minute.
const FAULT_ENV = { RUN_APPROVAL_RECHECK_SECONDS: '3' };

export async function startFaultStack(options: FaultStackOptions): Promise<FaultStack> {
  const postgres = await startFaultProxy(new URL(options.databaseUrl).host);
  const temporal = await startFaultProxy(options.temporalAddress);
  const apiTemporal = await startFaultProxy(options.temporalAddress);
  const temporalClient = () =>
    typeof options.temporalClient === 'function' ? options.temporalClient() : Promise.resolve(options.temporalClient);
  const taskQueue = `${options.queuePrefix ?? 'weft-durability-faults-'}${randomUUID().slice(0, 8)}`;
  const env = {
    ...FAULT_ENV,
    ...options.env,
    DATABASE_URL: throughProxy(options.databaseUrl, postgres),
    DATABASE_OWNER_URL: throughProxy(options.databaseOwnerUrl, postgres),
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: taskQueue,
  };
  const apiEnv = { ...env, TEMPORAL_ADDRESS: apiTemporal.address };
  const exits: string[] = [];
  let stopped = false;
  const workers: WeftProcess[] = [];
  const spawnWorker = (index: number) => {
    const worker = startWorkerProcess(env);
    workers[index] = worker;
    worker.child.once('exit', (code, signal) => {
      // A SIGKILL is the test's own (replaceWorker, stop).
      if (stopped || signal === 'SIGKILL' || workers[index] !== worker) return;
      const why = worker.output().trim().split('\n').slice(-3).join(' | ').slice(0, 400);
      exits.push(`worker ${index} exited (${code ?? signal}) at ${new Date().toISOString()}: ${why}`);
      // FAULT_RESTART_WORKERS=0: no supervisor, to see what a bare `npm start`-like process does.
      if (process.env.FAULT_RESTART_WORKERS === '0') return;
      setTimeout(() => {
        if (!stopped && workers[index] === worker) spawnWorker(index);
      }, 2_000);
    });
  };
  for (let index = 0; index < (options.workers ?? 1); index++) spawnWorker(index);
  // Every worker polling its queue (the SDK's default identity is `<pid>@<host>`): a fault injected
  // while a worker still boots tests its start-up, not a running worker.
  const polling = async () => {
    const { pollers } = await (await temporalClient()).workflowService.describeTaskQueue({
      namespace: 'default',
      taskQueue: { name: taskQueue },
      taskQueueType: temporalProto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    const identities = (pollers ?? []).map((poller) => poller.identity ?? '');
    return workers.every((worker) => identities.some((identity) => identity.startsWith(`${worker.child.pid}@`)));
  };
  const stack: FaultStack = {
    taskQueue,
    postgres,
    temporal,
    apiTemporal,
    api: await startApiProcess(apiEnv),
    workers,
    exits,
    async replaceWorker(index) {
      await workers[index]?.kill();
      spawnWorker(index);
    },
    async replaceApi() {
      await stack.api.kill();
      stack.api = await startApiProcess(apiEnv);
    },
    async stop() {
      stopped = true;
      await Promise.all([...workers.map((worker) => worker.kill()), stack.api.kill()]);
      await postgres.close();
      await temporal.close();
      await apiTemporal.close();
      // The API process wrote the maintenance schedules of its queue; what still runs there is ended.
      const client = await temporalClient();
      await deleteMaintenanceSchedules(client, taskQueue);
      await terminateTaskQueue(client, taskQueue);
    },
  };
  await eventually(polling, {
    what: 'every worker process to poll its task queue',
    timeoutMs: 120_000,
    intervalMs: 500,
  });
  return stack;
}

/** A positive number from the environment (an outage length, a load size), or the CI default. */
export function envNumber(variable: string, fallback: number): number {
  const value = Number(process.env[variable]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

/** One line of what a fault test did or found, marked so it stands out in mocha's output. */
export const report = (line: string) => console.log(`      [fault] ${line.replaceAll('\n', '\n      [fault] ')}`);

/** The worker processes that exited on their own (and were started again), for a test's report. */
export const describeExits = (stack: FaultStack) =>
  `worker exits (each restarted after 2 s, as compose's restart: on-failure): ${stack.exits.length}` +
  stack.exits.map((exit) => `\n  ${exit}`).join('');
