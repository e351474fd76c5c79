import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Worker } from '@temporalio/worker';
import type { DataSource } from 'typeorm';
import { createMigrationDataSource } from '../../src/app/data-source';
import { createApp } from '../../src/app/http';
import type { Runtime } from '../../src/app/runtime';
import { createRuntime } from '../../src/app/runtime';
import { deleteMaintenanceSchedules, ensureMaintenanceSchedules } from '../../src/app/schedules';
import type { Config } from '../../src/platform/config';
import { loadConfig, withTestDatabase } from '../../src/platform/config';
import { createLogger } from '../../src/platform/logger';
import { ensureSearchAttributes } from '../../src/platform/temporal/connection';
import type { Provisioning } from '../../src/tenancy/service';
import { createProvisioning } from '../../src/tenancy/service';
import { runWorker } from '../../workers/worker';
import { assertNothingLeft, terminateTaskQueue } from './leftovers';
import { prismProxy } from './prism';
import { startedSuiteTemporal, stopSuiteTemporal, suiteTemporal } from './temporal-server';

/** The whole service as a test sees it: real Postgres, a real Temporal server, a worker and HTTP. */
export interface Stack {
  config: Config;
  runtime: Runtime;
  baseUrl: string;
  /** The owner connection: fixtures and provisioning only, never the code under test. */
  ownerDataSource: DataSource;
  provisioning: Provisioning;
  /** Absent while a stack booted without its worker has not started one (`startWorker`). */
  worker?: Worker;
}

let stack: Stack | undefined;
let stopMain: (() => Promise<void>) | undefined;

/**
 * A complete service — runtime, worker on its own task queue, HTTP server — configured by the test
 * environment plus `overrides` (say, OPENAI_API_KEY and OPENAI_BASE_URL of a fake OpenAI server).
 * Returns the stack and a function that stops it. With `worker: false` nothing polls the task queue
 * (started workflows wait in it) until the test calls `startWorker`.
 */
export async function bootStack(
  overrides: Record<string, string> = {},
  options: { worker?: boolean } = {},
): Promise<{ stack: Stack; stop: () => Promise<void>; startWorker: () => Promise<void> }> {
  // First: the suite's own Temporal server, which also clears the operator's settings from process.env.
  const temporal = await suiteTemporal();
  const env = withTestDatabase(process.env);
  env.LOG_LEVEL ??= 'error';
  env.REQUEST_LOGGING ??= 'false';
  env.USAGE_FLUSH_INTERVAL_MS ??= '200';
  // Open streams re-check their credential this often (30 s in production), so a test sees a revocation soon.
  env.STREAM_CREDENTIAL_RECHECK_MS ??= '200';
  // Schedules may fire every second in the suite (60 s in production); test/schedule-limits.test.ts boots the default.
  env.SCHEDULE_MIN_INTERVAL_SECONDS ??= '1';
  // The origin a Temporal UI would call the codec endpoint from (test/temporal-codec.test.ts).
  env.TEMPORAL_UI_ORIGIN ??= 'http://temporal-ui.test:8233';
  // The one browser origin allowed to call /mcp besides PUBLIC_URL's (test/mcp.test.ts).
  env.MCP_ALLOWED_ORIGINS ??= 'http://mcp-client.test';
  env.TEMPORAL_ADDRESS = temporal.address;
  env.TEMPORAL_TASK_QUEUE = `weft-test-${randomUUID().slice(0, 8)}`;
  Object.assign(env, overrides);
  const config = loadConfig(env);
  const logger = createLogger(config);
  const stops: (() => Promise<void>)[] = [];

  const runtime = await createRuntime(config, logger);
  stops.push(() => runtime.close());
  await ensureSearchAttributes(runtime.temporal);
  // Paused, so that a nightly job firing mid-run cannot change what a test asserts; tests start
  // the maintenance workflows (or trigger the schedules) themselves.
  await ensureMaintenanceSchedules(runtime.temporal.client, config.TEMPORAL_TASK_QUEUE, { paused: true });
  // Run in reverse: the schedules go first, then whatever still runs on the queue is ended.
  stops.push(() => terminateTaskQueue(runtime.temporal.client, config.TEMPORAL_TASK_QUEUE));
  stops.push(() => deleteMaintenanceSchedules(runtime.temporal.client, config.TEMPORAL_TASK_QUEUE));

  const startWorker = async () => {
    const { worker, stop: stopWorker } = await runWorker(runtime);
    stops.push(stopWorker);
    booted.worker = worker;
  };

  const server: Server = createApp(runtime).listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  stops.push(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const ownerDataSource = await createMigrationDataSource(config).initialize();
  stops.push(() => ownerDataSource.destroy());

  const booted: Stack = {
    config,
    runtime,
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    ownerDataSource,
    provisioning: createProvisioning({ ownerDataSource, jwt: runtime.jwt }),
  };
  if (options.worker !== false) await startWorker();
  return {
    stack: booted,
    stop: async () => {
      for (const stop of stops.reverse()) await stop();
    },
    startWorker,
  };
}

/** The suite's main stack, shared by every test file. */
export async function startStack(): Promise<Stack> {
  if (stack) return stack;
  const booted = await bootStack();
  stack = booted.stack;
  stopMain = booted.stop;
  const proxy = await prismProxy(stack.baseUrl);
  if (proxy) {
    stack.baseUrl = proxy.url;
    const stopStackOnly = stopMain;
    stopMain = async () => {
      proxy.stop();
      await stopStackOnly();
    };
  }
  Object.assign(process.env, { ...withTestDatabase(process.env), TEMPORAL_ADDRESS: stack.config.TEMPORAL_ADDRESS });
  return stack;
}

export function getStack(): Stack {
  if (!stack) throw new Error('stack not started: root hooks run startStack() first');
  return stack;
}

/** Stops the main stack, checks that the suite left nothing on its Temporal server, then stops that server. */
export async function stopStack(): Promise<void> {
  try {
    await stopMain?.();
    stack = undefined;
    stopMain = undefined;
    const suite = await startedSuiteTemporal();
    if (suite) await assertNothingLeft(suite);
  } finally {
    await stopSuiteTemporal();
  }
}
