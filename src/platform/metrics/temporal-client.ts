import type { Interceptor } from '@grpc/grpc-js';
import { status as GrpcStatus, InterceptingCall } from '@grpc/grpc-js';
import { Counter } from 'prom-client';
import { metricsRegistry } from './registry';

const errors = new Counter({
  name: 'weft_temporal_client_errors_total',
  help:
    'Temporal client calls that failed after the SDK’s retries, by gRPC method and status code ' +
    '(ALREADY_EXISTS is an idempotent start meeting its earlier self, not an outage).',
  labelNames: ['method', 'code'],
  registers: [metricsRegistry],
});

const codeName = (code: number) => (GrpcStatus[code] as string | undefined) ?? String(code);

/**
 * A gRPC interceptor that counts the client's failed calls. Placed ahead of the SDK's retry
 * interceptor, it sees each call's final status, not every retried attempt. The method label is the
 * service's method name (`StartWorkflowExecution`): a fixed vocabulary.
 */
export const temporalClientErrors: Interceptor = (options, nextCall) => {
  const method = options.method_definition.path.split('/').pop() ?? 'unknown';
  return new InterceptingCall(nextCall(options), {
    start(metadata, _listener, next) {
      next(metadata, {
        onReceiveStatus(status, forward) {
          if (status.code !== GrpcStatus.OK) errors.inc({ method, code: codeName(status.code) });
          forward(status);
        },
      });
    },
  });
};
