import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { Worker } from '@temporalio/worker';
import { loadConfig, withTestDatabase, type Config } from '../../src/config';
import { createLogger } from '../../src/logger';
import { createApp } from '../../src/api/app';
import { createRuntime, type Runtime } from '../../src/runtime';
import { createMigrationDataSource } from '../../src/db/data-source';
import { createProvisioning, type Provisioning } from '../../src/tenancy/service';
import { ensureSearchAttributes } from '../../src/temporal/connection';
import { ensureMaintenanceSchedules } from '../../src/maintenance/schedules';
import { isListening, startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { createActivities } from '../../activities';
import { createWorker } from '../../workers/worker';
import { freePort } from './ports';

/** The whole service as a test sees it: real Postgres, a real Temporal server, a worker and HTTP. */
export interface Stack {
  config: Config;
  runtime: Runtime;
  baseUrl: string;
  /** The owner connection: fixtures and provisioning only, never the code under test. */
  ownerDataSource: DataSource;
  provisioning: Provisioning;
  worker: Worker;
}

let stack: Stack | undefined;
const teardown: (() => Promise<void>)[] = [];

/**
 * Uses the Temporal server at TEMPORAL_ADDRESS when one answers (say, `npm start`'s), otherwise
 * starts an in-memory `temporal server start-dev` on a free port. Each run has its own task queue.
 */
export async function startStack(): Promise<Stack> {
  if (stack) return stack;
  const env = withTestDatabase(process.env);
  env.LOG_LEVEL ??= 'warn';
  env.REQUEST_LOGGING ??= 'false';
  env.USAGE_FLUSH_INTERVAL_MS ??= '200';
  env.TEMPORAL_TASK_QUEUE = `weft-test-${randomUUID().slice(0, 8)}`;
  const probe = loadConfig(env);
  if (!(await isListening(probe.TEMPORAL_ADDRESS))) {
    env.TEMPORAL_ADDRESS = `127.0.0.1:${await freePort()}`;
    const server: DevServer = await startDevServer({ address: env.TEMPORAL_ADDRESS });
    teardown.push(() => server.stop());
  }
  Object.assign(process.env, env);
  const config = loadConfig(env);
  const logger = createLogger(config);

  const runtime = await createRuntime(config, logger);
  teardown.push(() => runtime.close());
  await ensureSearchAttributes(runtime.temporal);
  await ensureMaintenanceSchedules(runtime.temporal.client, config.TEMPORAL_TASK_QUEUE);

  const { worker, connection } = await createWorker({
    address: config.TEMPORAL_ADDRESS,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities: createActivities(runtime),
  });
  const running = worker.run();
  teardown.push(async () => {
    worker.shutdown();
    await running;
    await connection.close();
  });

  const server: Server = createApp(runtime).listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  teardown.push(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const ownerDataSource = await createMigrationDataSource(config).initialize();
  teardown.push(() => ownerDataSource.destroy());

  stack = {
    config,
    runtime,
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    ownerDataSource,
    provisioning: createProvisioning({ ownerDataSource, jwt: runtime.jwt }),
    worker,
  };
  return stack;
}

export function getStack(): Stack {
  if (!stack) throw new Error('stack not started: root hooks run startStack() first');
  return stack;
}

export async function stopStack(): Promise<void> {
  for (const stop of teardown.reverse()) await stop();
  teardown.length = 0;
  stack = undefined;
}
