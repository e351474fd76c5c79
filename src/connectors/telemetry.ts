import { SpanStatusCode, trace } from '@opentelemetry/api';
import { Histogram } from 'prom-client';
import { metricsRegistry } from '../platform/metrics/registry';
import { ConnectorCallError } from './outbound';

const calls = new Histogram({
  name: 'weft_connector_call_duration_seconds',
  help: 'Remote calls of connectors’ tools, by connector name and outcome (ok or the failure’s reason).',
  labelNames: ['connector', 'outcome'] as const,
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [metricsRegistry],
});

const tracer = trace.getTracer('weft-connectors');

/**
 * One remote call as an `execute_tool` span (the OpenTelemetry GenAI name) and an observation of
 * the histogram: the connector, the tool and the outcome, never the input, the output or a secret.
 */
export function observedCall<T>(connector: string, tool: string, call: () => Promise<T>): Promise<T> {
  const started = performance.now();
  return tracer.startActiveSpan(
    'execute_tool',
    { attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': tool, 'weft.connector': connector } },
    async (span) => {
      let outcome = 'ok';
      try {
        return await call();
      } catch (error) {
        outcome = error instanceof ConnectorCallError ? error.reason : 'error';
        span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
        throw error;
      } finally {
        span.setAttribute('weft.outcome', outcome);
        span.end();
        calls.observe({ connector, outcome }, (performance.now() - started) / 1000);
      }
    },
  );
}
