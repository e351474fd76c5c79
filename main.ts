// First: tracing (when the OTEL_* variables ask for it) must patch http and pg before they load.
import './src/platform/telemetry/preload';

import type { Server } from 'node:http';
import path from 'node:path';
import { createApp } from './src/app/http';
import type { Runtime } from './src/app/runtime';
import { createRuntime } from './src/app/runtime';
import { ensureMaintenanceSchedules } from './src/app/schedules';
import { loadConfig } from './src/platform/config';
import { createLogger } from './src/platform/logger';
import { activeTracing } from './src/platform/telemetry/tracing';
import { ensureSearchAttributes } from './src/platform/temporal/connection';
import type { DevServer } from './src/platform/temporal/dev-server';
import { isListening, startDevServer } from './src/platform/temporal/dev-server';
import { runWorker } from './workers/worker';

/** `npm start`: a Temporal dev server when none answers, then the worker and the API, stopped together on Ctrl-C. */
async function main() {
  let config = loadConfig();
  const logger = createLogger(config);
  const stops: (() => Promise<void>)[] = [];
  let stopping = false;

  async function shutdown(signal: string) {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    for (const stop of stops.reverse()) {
      try {
        await stop();
      } catch (error) {
        logger.error({ err: error }, 'error while stopping');
      }
    }
    process.exit(0);
  }
  // Stops run in reverse: the spans of everything else's shutdown are flushed last.
  const tracing = activeTracing();
  if (tracing) stops.push(() => tracing.shutdown());
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

  let devServer: DevServer | undefined;
  if (!(await isListening(config.TEMPORAL_ADDRESS))) {
    if (config.TEMPORAL_DEV_SERVER === 'never') throw new Error(`No Temporal server at ${config.TEMPORAL_ADDRESS}`);
    logger.info({ address: config.TEMPORAL_ADDRESS }, 'starting temporal server start-dev');
    // The dev server's UI decodes with Weft's codec on loopback, without a credential: development only.
    const devCodec = config.NODE_ENV === 'development';
    if (devCodec) config = { ...config, TEMPORAL_UI_DEV_CODEC: true };
    const apiHost = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
    devServer = await startDevServer({
      address: config.TEMPORAL_ADDRESS,
      uiPort: config.TEMPORAL_UI_PORT,
      uiCodecEndpoint: devCodec ? `http://${apiHost}:${config.PORT}/v1/temporal-codec/dev` : undefined,
      dbFile: path.resolve(__dirname, '.data', 'temporal.db'),
      log: (line) => logger.debug({ temporal: line }),
    });
    stops.push(() => devServer!.stop());
    const host = config.TEMPORAL_ADDRESS.split(':')[0];
    logger.info(`Temporal UI: http://${host}:${config.TEMPORAL_UI_PORT}`);
  }

  // The API and the worker each get a runtime of their own, so each has its own database pool:
  // a burst of activities cannot take the connections requests need, nor the other way round.
  const runtimes: Partial<Record<'api' | 'worker', Runtime>> = {};
  for (const role of ['api', 'worker'] as const) {
    if (config.WEFT_PROCESS !== 'all' && config.WEFT_PROCESS !== role) continue;
    const runtime = await createRuntime(config, logger, role);
    stops.push(() => runtime.close());
    runtimes[role] = runtime;
  }
  const first = runtimes.api ?? runtimes.worker;
  if (!first) throw new Error(`Nothing to run for WEFT_PROCESS=${config.WEFT_PROCESS}`);
  await ensureSearchAttributes(first.temporal);
  // One writer of the schedules: the process that runs the API. A worker-only process (docker
  // compose's `worker`, or a test's) leaves them alone, so it never creates schedules of its own.
  if (runtimes.api) await ensureMaintenanceSchedules(runtimes.api.temporal.client, config.TEMPORAL_TASK_QUEUE);

  if (runtimes.worker) {
    const { stop: stopWorker } = await runWorker(runtimes.worker);
    stops.push(stopWorker);
    logger.info({ task_queue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
  }

  if (runtimes.api) {
    const server: Server = createApp(runtimes.api).listen(config.PORT, config.HOST);
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    stops.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    logger.info(`Weft API: http://${config.HOST}:${config.PORT} (reference: /docs)`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
