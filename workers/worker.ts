import { DefaultLogger, makeTelemetryFilterString, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { Activities } from '../activities';
import { createActivities } from '../activities';
import type { Runtime as WeftRuntime } from '../src/runtime';
import { loadWorkflowBundle } from './bundle';

let runtimeInstalled = false;

/** The SDK's and the Rust core's logs at the service's level (at least warnings), once per process. */
function installRuntime(level: 'ERROR' | 'WARN') {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  // No shutdown signals: the process entrypoint owns Ctrl-C and stops the API, worker and server in order.
  Runtime.install({
    shutdownSignals: [],
    logger: new DefaultLogger(level),
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) } },
  });
}

export interface WorkerOptions {
  address: string;
  namespace: string;
  taskQueue: string;
  activities: Activities;
  /** `error` silences the SDK's warnings about failed activities (the test suite fails some on purpose). */
  logLevel?: string;
}

/** A worker for Weft's task queue with the prebuilt workflow bundle and the given activities. */
export async function createWorker(options: WorkerOptions): Promise<{ worker: Worker; connection: NativeConnection }> {
  installRuntime(
    options.logLevel === 'error' || options.logLevel === 'fatal' || options.logLevel === 'silent' ? 'ERROR' : 'WARN',
  );
  const connection = await NativeConnection.connect({ address: options.address });
  const worker = await Worker.create({
    connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    workflowBundle: await loadWorkflowBundle(),
    activities: options.activities,
  });
  return { worker, connection };
}

/** Starts Weft's worker for a runtime (its task queue, its services as activities); `stop` drains it. */
export async function runWorker(runtime: WeftRuntime): Promise<{ worker: Worker; stop(): Promise<void> }> {
  const { config } = runtime;
  const { worker, connection } = await createWorker({
    address: config.TEMPORAL_ADDRESS,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities: createActivities(runtime),
    logLevel: config.LOG_LEVEL,
  });
  const running = worker.run();
  return {
    worker,
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}
