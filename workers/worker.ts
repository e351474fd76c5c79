import { DefaultLogger, NativeConnection, Runtime, Worker, makeTelemetryFilterString } from '@temporalio/worker';
import type { Activities } from '../activities';
import { loadWorkflowBundle } from './bundle';

let runtimeInstalled = false;

/** Quiet the SDK's and the Rust core's logs to warnings, once per process. */
function installRuntime() {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  // No shutdown signals: the process entrypoint owns Ctrl-C and stops the API, worker and server in order.
  Runtime.install({ shutdownSignals: [], logger: new DefaultLogger('WARN'), telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) } } });
}

export interface WorkerOptions {
  address: string;
  namespace: string;
  taskQueue: string;
  activities: Activities;
}

/** A worker for Weft's task queue with the prebuilt workflow bundle and the given activities. */
export async function createWorker(options: WorkerOptions): Promise<{ worker: Worker; connection: NativeConnection }> {
  installRuntime();
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
