import type { Resource } from '@opentelemetry/resources';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ClientInterceptors } from '@temporalio/client';
import type { WorkerInterceptors, WorkerOptions } from '@temporalio/worker';
import { requestedSpanIds } from './genai';
import { redactingSpanProcessor, workflowSpanProcessor } from './redaction';

/**
 * OpenTelemetry tracing, configured by the standard `OTEL_*` variables and off unless they ask for it.
 * Off, nothing below loads the SDK (every `require` is lazy) and the Temporal client and worker get
 * no interceptors: a process without the variables runs exactly as before. On, one trace runs from
 * the HTTP request through the workflow start, the workflow and each activity down to the SQL
 * statements, exported over OTLP/HTTP (docs/operations.md, "Tracing").
 */
export interface Tracing {
  resource: Resource;
  /** The processor behind the provider, which the worker's workflow-span sink feeds as well. */
  spanProcessor: SpanProcessor;
  /** Flushes what is buffered and stops exporting. */
  shutdown(): Promise<void>;
}

/** The attribute the HTTP server span carries the request's correlation id in (set by `requestContext`). */
export const CORRELATION_ID_ATTRIBUTE = 'weft.correlation_id';

let current: Tracing | undefined;

/**
 * True when the variables ask for traces: an OTLP endpoint, or `OTEL_TRACES_EXPORTER=otlp`.
 * `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn it off whatever else is set.
 */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = env.OTEL_TRACES_EXPORTER?.split(',').map((name) => name.trim().toLowerCase());
  if (exporters?.includes('none')) return false;
  if (exporters?.includes('otlp')) return true;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/** The tracing this process started, if any. */
export function activeTracing(): Tracing | undefined {
  return current;
}

/**
 * Starts tracing when the variables ask for it (once per process; later calls answer the same).
 * Must run before `http` and `pg` are first required: the instrumentations patch them on load.
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env): Tracing | undefined {
  if (current || !tracingRequested(env)) return current;
  const { NodeTracerProvider } =
    require('@opentelemetry/sdk-trace-node') as typeof import('@opentelemetry/sdk-trace-node');
  const { BatchSpanProcessor, RandomIdGenerator } =
    require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { OTLPTraceExporter } =
    require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { Resource, envDetectorSync } =
    require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { registerInstrumentations } =
    require('@opentelemetry/instrumentation') as typeof import('@opentelemetry/instrumentation');
  const { HttpInstrumentation } =
    require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { PgInstrumentation } =
    require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');

  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over the default name.
  const resource = new Resource({ 'service.name': 'weft' }).merge(envDetectorSync.detect());
  // The exporter reads OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _HEADERS and _TIMEOUT; the batch
  // processor OTEL_BSP_*; the provider OTEL_TRACES_SAMPLER[_ARG].
  // Every span is redacted on its way out (no credential, hash or query string: redaction.ts).
  const spanProcessor = redactingSpanProcessor(new BatchSpanProcessor(new OTLPTraceExporter()));
  // Random ids, except for a run's `invoke_agent` span, whose id its steps already named (genai.ts).
  const random = new RandomIdGenerator();
  const idGenerator = {
    generateTraceId: () => requestedSpanIds()?.traceId ?? random.generateTraceId(),
    generateSpanId: () => requestedSpanIds()?.spanId ?? random.generateSpanId(),
  };
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor], idGenerator });
  provider.register();
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        // Probes would be most of the traces and say nothing.
        ignoreIncomingRequestHook: (request) => request.url === '/v1/health' || request.url === '/metrics',
      }),
      // No Koa instrumentation: its releases for this SDK line (the one Temporal's interceptors
      // use) stop at Koa 2. The request-context middleware names the server span by its route
      // template and gives it the correlation id instead.
      // Statements inside a request or an activity only: the pollers' own queries would be a root
      // trace each, every second. Values are not recorded, only the parameterised text, and a unit
      // of work's BEGIN message, which writes its values in, shows them as `?` (redaction.ts).
      new PgInstrumentation({ requireParentSpan: true }),
    ],
  });
  current = { resource, spanProcessor, shutdown: () => provider.shutdown() };
  return current;
}

const interceptorsPackage = () =>
  require('@temporalio/interceptors-opentelemetry') as typeof import('@temporalio/interceptors-opentelemetry');

/** The Temporal client's interceptors: with tracing on, a `StartWorkflow` span whose context the workflow inherits. */
export function temporalClientTracing(): ClientInterceptors | undefined {
  if (!current) return undefined;
  return { workflow: [new (interceptorsPackage().OpenTelemetryWorkflowClientInterceptor)()] };
}

/**
 * The worker's share, with tracing on: `RunActivity` spans under the workflow's `StartActivity`, the
 * sink through which the sandbox's `RunWorkflow`/`StartActivity` spans leave it, and the workflow
 * interceptor module the bundle must hold (its spans come from the sandbox's seeded ids and clock,
 * so replay stays deterministic).
 */
export function temporalWorkerTracing():
  | { interceptors: WorkerInterceptors; sinks: NonNullable<WorkerOptions['sinks']>; workflowModule: string }
  | undefined {
  if (!current) return undefined;
  const otel = interceptorsPackage();
  return {
    interceptors: {
      activity: [
        (ctx) => ({
          inbound: new otel.OpenTelemetryActivityInboundInterceptor(ctx),
          outbound: new otel.OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
    },
    // Through a filter: the sink would export the whole WorkflowInfo with each span (redaction.ts).
    sinks: { exporter: otel.makeWorkflowExporter(workflowSpanProcessor(current.spanProcessor), current.resource) },
    workflowModule: require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
  };
}
