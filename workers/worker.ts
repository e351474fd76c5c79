import { DefaultLogger, makeTelemetryFilterString, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { Activities } from '../activities';
import { createActivities } from '../activities';
import type { Runtime as WeftRuntime } from '../src/app/runtime';
import type { Config } from '../src/platform/config';
import { startMetricsServer } from '../src/platform/metrics/scrape';
import { temporalWorkerTracing } from '../src/platform/telemetry/tracing';
import type { PayloadCodecConfig } from '../src/platform/temporal/codec';
import { createPayloadCodec, dataConverter } from '../src/platform/temporal/codec';
import { temporalAnswers } from '../src/platform/temporal/connection';
import type { TemporalConnectionConfig } from '../src/platform/temporal/connection-options';
import { temporalConnectionOptions } from '../src/platform/temporal/connection-options';
import { freePort } from '../src/platform/temporal/dev-server';
import { LIMITS } from '../src/rules/limits';
import { loadWorkflowBundle } from './bundle';

let runtimeInstalled = false;
/** Where the SDK's Prometheus exporter listens, when this process installed the runtime with one. */
let sdkMetricsAddress: string | undefined;

/**
 * The SDK's and the Rust core's logs at the service's level (at least warnings), once per process.
 * With `sdkMetrics`, the core's own worker metrics (`temporal_*`: pollers, slots, schedule-to-start
 * latency, sticky cache) are exported in Prometheus format on that loopback address.
 */
function installRuntime(level: 'ERROR' | 'WARN', sdkMetrics?: string) {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  sdkMetricsAddress = sdkMetrics;
  // No shutdown signals: the process entrypoint owns Ctrl-C and stops the API, worker and server in order.
  Runtime.install({
    shutdownSignals: [],
    logger: new DefaultLogger(level),
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) },
      ...(sdkMetrics && {
        metrics: {
          prometheus: { bindAddress: sdkMetrics, countersTotalSuffix: true, useSecondsForDurations: true },
        },
      }),
    },
  });
}

export interface WorkerOptions {
  /**
   * Address, TLS, API key, namespace and payload keys: the same settings the API's client uses, or
   * neither side could read the other's payloads.
   */
  config: TemporalConnectionConfig &
    PayloadCodecConfig &
    Pick<Config, 'TEMPORAL_NAMESPACE'> &
    Partial<Pick<Config, 'WORKER_MAX_ACTIVITIES' | 'WORKER_MAX_WORKFLOW_TASKS'>>;
  taskQueue: string;
  activities: Activities;
  /** `error` silences the SDK's warnings about failed activities (the test suite fails some on purpose). */
  logLevel?: string;
  /** A loopback `host:port` for the SDK's Prometheus exporter (only the process's first worker sets it). */
  sdkMetrics?: string;
}

/** A worker for Weft's task queue with the prebuilt workflow bundle and the given activities. */
export async function createWorker(options: WorkerOptions): Promise<{ worker: Worker; connection: NativeConnection }> {
  installRuntime(
    options.logLevel === 'error' || options.logLevel === 'fatal' || options.logLevel === 'silent' ? 'ERROR' : 'WARN',
    options.sdkMetrics,
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
    ...(options.config.WORKER_MAX_ACTIVITIES
      ? { maxConcurrentActivityTaskExecutions: options.config.WORKER_MAX_ACTIVITIES }
      : {}),
    ...(options.config.WORKER_MAX_WORKFLOW_TASKS
      ? { maxConcurrentWorkflowTaskExecutions: options.config.WORKER_MAX_WORKFLOW_TASKS }
      : {}),
    ...(tracing ? { interceptors: tracing.interceptors, sinks: tracing.sinks } : {}),
    // Codecs run in the worker's main thread, outside the workflow sandbox: workflow code is unchanged.
    // Refused payloads decode to a placeholder that fails the workflow at once (workflows/interceptors.ts).
    dataConverter: dataConverter(createPayloadCodec(options.config, { refuse: 'placeholder' })),
  });
  return { worker, connection };
}

/**
 * Starts Weft's worker for a runtime (its task queue, its services as activities); `stop` drains it.
 * With WORKER_METRICS_PORT set, the process also serves `GET /metrics` there: its own registry (pools,
 * Node) followed by the SDK's worker metrics, which the core exports on a loopback port of its own.
 */
export async function runWorker(runtime: WeftRuntime): Promise<{ worker: Worker; stop(): Promise<void> }> {
  const { config } = runtime;
  const metricsPort = config.WORKER_METRICS_PORT;
  const sdkMetrics = metricsPort && !runtimeInstalled ? `127.0.0.1:${await freePort()}` : undefined;
  const { worker, connection } = await createWorker({
    config,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities: createActivities(runtime),
    logLevel: config.LOG_LEVEL,
    sdkMetrics,
  });
  const metrics = metricsPort
    ? await startMetricsServer({
        host: config.WORKER_METRICS_HOST,
        port: metricsPort,
        token: config.METRICS_TOKEN,
        upstream: sdkMetricsAddress && `http://${sdkMetricsAddress}/metrics`,
        upstreamTimeoutMs: LIMITS.metrics.sdkScrapeTimeoutMs,
      })
    : undefined;
  let current = { worker, connection, running: worker.run() };
  let stopped = false;

  /** A new worker polls at once; the old one shuts down (handing its sticky queue back) and closes. */
  const replace = async () => {
    const fresh = await createWorker({
      config,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      activities: createActivities(runtime),
      logLevel: config.LOG_LEVEL,
    });
    const old = current;
    current = { ...fresh, running: fresh.worker.run() };
    old.worker.shutdown();
    await old.running.catch((error: unknown) => runtime.logger.warn({ err: error }, 'replaced worker ended with'));
    await old.connection.close();
  };

  // Issue 44 item 6: the core retries a failed poll after up to 10 s ± 20 % (fixed in the SDK), so after
  // a long outage the worker would find the returned server up to 12 s late. It watches Temporal through
  // the runtime's client instead and, once Temporal answers after an outage, replaces itself.
  const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
  const watching = (async () => {
    let downSince: number | undefined;
    while (!stopped) {
      const answers = await temporalAnswers(runtime.temporal, LIMITS.worker.temporalProbeMs);
      if (!answers) downSince ??= Date.now();
      else if (downSince !== undefined) {
        const down = Date.now() - downSince;
        downSince = undefined;
        if (down >= LIMITS.worker.replaceAfterOutageMs && !stopped) {
          runtime.logger.info({ down_ms: down }, 'Temporal answers again; replacing the worker to poll at once');
          await replace().catch((error: unknown) =>
            runtime.logger.warn({ err: error }, 'worker not replaced; its own poll retry will reconnect'),
          );
        }
      }
      await pause(LIMITS.worker.temporalProbeMs);
    }
  })();
  return {
    worker,
    async stop() {
      stopped = true;
      await watching;
      await metrics?.stop();
      current.worker.shutdown();
      await current.running;
      await current.connection.close();
    },
  };
}
