import { DefaultLogger, makeTelemetryFilterString, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { Activities } from '../activities';
import { createActivities } from '../activities';
import type { Runtime as WeftRuntime } from '../src/app/runtime';
import type { Config } from '../src/platform/config';
import { temporalWorkerTracing } from '../src/platform/telemetry/tracing';
import type { PayloadCodecConfig } from '../src/platform/temporal/codec';
import { createPayloadCodec, dataConverter } from '../src/platform/temporal/codec';
import type { TemporalConnectionConfig } from '../src/platform/temporal/connection-options';
import { temporalConnectionOptions } from '../src/platform/temporal/connection-options';
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
  /**
   * Address, TLS, API key, namespace and payload keys: the same settings the API's client uses, or
   * neither side could read the other's payloads.
   */
  config: TemporalConnectionConfig & PayloadCodecConfig & Pick<Config, 'TEMPORAL_NAMESPACE'>;
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
  const connection = await NativeConnection.connect(temporalConnectionOptions(options.config));
  // Off unless the OTEL_* variables turned tracing on (src/platform/telemetry/tracing.ts).
  const tracing = temporalWorkerTracing();
  const worker = await Worker.create({
    connection,
    namespace: options.config.TEMPORAL_NAMESPACE,
    taskQueue: options.taskQueue,
    workflowBundle: await loadWorkflowBundle({ tracingModule: tracing?.workflowModule }),
    activities: options.activities,
    ...(tracing ? { interceptors: tracing.interceptors, sinks: tracing.sinks } : {}),
    // Codecs run in the worker's main thread, outside the workflow sandbox: workflow code is unchanged.
    // Refused payloads decode to a placeholder that fails the workflow at once (workflows/interceptors.ts).
    dataConverter: dataConverter(createPayloadCodec(options.config, { refuse: 'placeholder' })),
  });
  return { worker, connection };
}

/** Starts Weft's worker for a runtime (its task queue, its services as activities); `stop` drains it. */
export async function runWorker(runtime: WeftRuntime): Promise<{ worker: Worker; stop(): Promise<void> }> {
  const { config } = runtime;
  const { worker, connection } = await createWorker({
    config,
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
