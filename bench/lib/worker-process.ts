/**
 * A benchmark's worker process (forked by bench/runs.ts): Weft's worker on TEMPORAL_TASK_QUEUE and
 * the anchor workflows' worker on BENCH_ANCHOR_TASK_QUEUE (with the hand-written durable run's
 * activities, on a `pg.Pool` of their own), in one process of their own, so that its memory is the
 * workers' alone. It answers `memory` (after a full GC when node runs with --expose-gc) and stops
 * on `stop`.
 */
import path from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { Pool } from 'pg';
import { createActivities } from '../../activities';
import { createRuntime } from '../../src/app/runtime';
import { loadConfig } from '../../src/platform/config';
import { createLogger } from '../../src/platform/logger';
import { createPayloadCodec, dataConverter } from '../../src/platform/temporal/codec';
import { createWorker } from '../../workers/worker';
import { anchorActivities, floorActivities } from '../anchors/activities';

export interface WorkerMemory {
  rssBytes: number;
  heapUsedBytes: number;
  maxCachedWorkflows: number;
}

async function main() {
  const config = loadConfig();
  const runtime = await createRuntime(config, createLogger(config), 'worker');
  const { worker, connection } = await createWorker({
    config,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities: createActivities(runtime),
    logLevel: 'error',
  });
  // The owner role, as the floor's API: its plain SELECTs need no RLS context (bench/runs.ts).
  const floorPool = new Pool({ connectionString: config.DATABASE_OWNER_URL, max: config.DATABASE_WORKER_POOL_SIZE });
  const anchor = await Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: process.env.BENCH_ANCHOR_TASK_QUEUE!,
    workflowBundle: await bundleWorkflowCode({
      workflowsPath: path.join(__dirname, '../anchors/workflows.ts'),
      logger: { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} },
    }),
    activities: { ...anchorActivities, ...floorActivities(floorPool) },
    // The same codec as Weft's worker, so the anchor pays the same encryption cost.
    dataConverter: dataConverter(createPayloadCodec(config)),
  });
  const running = Promise.all([worker.run(), anchor.run()]);
  const send = (message: unknown) => process.send?.(message);

  process.on('message', async (message) => {
    if (message === 'memory') {
      (globalThis as { gc?: () => void }).gc?.();
      const usage = process.memoryUsage();
      const memory: WorkerMemory = {
        rssBytes: usage.rss,
        heapUsedBytes: usage.heapUsed,
        maxCachedWorkflows: worker.options.maxCachedWorkflows,
      };
      send({ memory });
    } else if (message === 'stop') {
      worker.shutdown();
      anchor.shutdown();
      await running;
      await connection.close();
      await floorPool.end();
      await runtime.close();
      process.exit(0);
    }
  });
  send({ ready: true });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
