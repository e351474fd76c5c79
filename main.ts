import type { Server } from 'node:http';
import path from 'node:path';
import { ensureMaintenanceSchedules } from './src/maintenance/schedules';
import { createApp } from './src/platform/api/app';
import { loadConfig } from './src/platform/config';
import { createLogger } from './src/platform/logger';
import { ensureSearchAttributes } from './src/platform/temporal/connection';
import type { DevServer } from './src/platform/temporal/dev-server';
import { isListening, startDevServer } from './src/platform/temporal/dev-server';
import { createRuntime } from './src/runtime';
import { runWorker } from './workers/worker';

/** `npm start`: a Temporal dev server when none answers, then the worker and the API, stopped together on Ctrl-C. */
async function main() {
  const config = loadConfig();
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
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

  let devServer: DevServer | undefined;
  if (!(await isListening(config.TEMPORAL_ADDRESS))) {
    if (config.TEMPORAL_DEV_SERVER === 'never') throw new Error(`No Temporal server at ${config.TEMPORAL_ADDRESS}`);
    logger.info({ address: config.TEMPORAL_ADDRESS }, 'starting temporal server start-dev');
    devServer = await startDevServer({
      address: config.TEMPORAL_ADDRESS,
      uiPort: config.TEMPORAL_UI_PORT,
      dbFile: path.resolve(__dirname, '.data', 'temporal.db'),
      log: (line) => logger.debug({ temporal: line }),
    });
    stops.push(() => devServer!.stop());
    const host = config.TEMPORAL_ADDRESS.split(':')[0];
    logger.info(`Temporal UI: http://${host}:${config.TEMPORAL_UI_PORT}`);
  }

  const runtime = await createRuntime(config, logger);
  stops.push(() => runtime.close());
  await ensureSearchAttributes(runtime.temporal);
  // One writer of the schedules: the process that runs the API. A worker-only process (docker
  // compose's `worker`, or a test's) leaves them alone, so it never creates schedules of its own.
  if (config.WEFT_PROCESS !== 'worker') {
    await ensureMaintenanceSchedules(runtime.temporal.client, config.TEMPORAL_TASK_QUEUE);
  }

  if (config.WEFT_PROCESS !== 'api') {
    const { stop: stopWorker } = await runWorker(runtime);
    stops.push(stopWorker);
    logger.info({ task_queue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
  }

  if (config.WEFT_PROCESS !== 'worker') {
    const server: Server = createApp(runtime).listen(config.PORT, config.HOST);
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    stops.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    logger.info(`Weft API: http://${config.HOST}:${config.PORT} (reference: /docs)`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
