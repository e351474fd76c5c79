import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import { createMigrationDataSource } from '../../src/app/data-source';
import { createRuntime } from '../../src/app/runtime';
import { loadConfig, withDatabaseSuffix } from '../../src/platform/config';
import { createLogger } from '../../src/platform/logger';
import type { DevServer } from '../../src/platform/temporal/dev-server';
import { freePort, startDevServer } from '../../src/platform/temporal/dev-server';
import { createProvisioning } from '../../src/tenancy/service';

/** A Temporal server the bench did not start for this service: its address and its processes. */
export interface ExternalTemporal {
  address: string;
  pids(): number[];
  /** Its persistence and visibility databases on the machine's Postgres. */
  databases: string[];
}

/**
 * A Temporal dev server of the bench's own, on a free loopback port, with the dispatch settings
 * `npm start` uses; `env.TEMPORAL_ADDRESS` points at it. Never the default port: an operator's
 * `npm start` (and its UI) may own it, and its load would fall on the figures.
 */
export async function privateTemporal(env: NodeJS.ProcessEnv, dynamicConfig?: readonly string[]): Promise<DevServer> {
  env.TEMPORAL_ADDRESS = `127.0.0.1:${await freePort()}`;
  return startDevServer({ address: env.TEMPORAL_ADDRESS, ...(dynamicConfig ? { dynamicConfig } : {}) });
}

/** Serves `app` on a free loopback port: the server (to close) and its base URL. */
export async function serveLocally(app: Koa): Promise<{ server: Server; url: string }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/**
 * The service a benchmark measures: the bench database (`_bench`), a private Temporal server, the
 * runtime on a task queue of its own (`<queue>-<random>`), and the owner connection for fixtures.
 * `settings` are further environment variables for this bench; `env` is the environment it booted
 * with (for a forked worker). `stop` closes them.
 */
export async function bootBenchService(
  options: {
    queue?: string;
    settings?: Record<string, string>;
    temporalSettings?: readonly string[];
    /** A Temporal the caller runs (the cluster: bench/lib/temporal-target.ts) instead of a private dev server. */
    temporal?: ExternalTemporal;
  } = {},
) {
  const env = withDatabaseSuffix(process.env, '_bench');
  env.LOG_LEVEL = 'error';
  env.REQUEST_LOGGING = 'false';
  // As in production (NODE_ENV=production turns it off): the test suite checks every response instead.
  env.RESPONSE_VALIDATION = 'false';
  Object.assign(env, options.settings);
  env.TEMPORAL_TASK_QUEUE = `${options.queue ?? 'weft-bench'}-${randomUUID().slice(0, 8)}`;
  let temporal: DevServer | undefined;
  if (options.temporal) env.TEMPORAL_ADDRESS = options.temporal.address;
  else temporal = await privateTemporal(env, options.temporalSettings);
  const external = options.temporal;
  const config = loadConfig(env);
  const runtime = await createRuntime(config, createLogger(config));
  const owner = await createMigrationDataSource(config).initialize();
  const provisioning = createProvisioning({ ownerDataSource: owner, jwt: runtime.jwt });
  return {
    env,
    config,
    runtime,
    owner,
    provisioning,
    /** The Temporal server's processes (its CPU, bench/lib/cpu.ts). */
    temporalPids: (): number[] => (external ? external.pids() : temporal?.process.pid ? [temporal.process.pid] : []),
    /** Temporal's databases on the machine's Postgres (none for the dev server: SQLite in its process). */
    temporalDatabases: external?.databases ?? [],
    /** Weft's database, as its Postgres backends name it. */
    database: new URL(config.DATABASE_URL).pathname.slice(1),
    async stop() {
      await owner.destroy();
      await runtime.close();
      await temporal?.stop();
    },
  };
}
