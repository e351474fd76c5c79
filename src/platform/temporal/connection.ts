import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { SearchAttributeType } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { Config } from '../config';
import { temporalClientErrors } from '../metrics/temporal-client';
import { temporalClientTracing } from '../telemetry/tracing';
import type { EncryptionCodec, PayloadCodecConfig } from './codec';
import { createPayloadCodec, dataConverter } from './codec';
import type { TemporalConnectionConfig } from './connection-options';
import { temporalChannelArgs, temporalConnectionOptions } from './connection-options';
import { CUSTOM_SEARCH_ATTRIBUTES } from './search-attributes';
import { WorkflowStarter } from './starter';

export interface TemporalHandle {
  connection: Connection;
  client: Client;
  namespace: string;
  taskQueue: string;
  /** The one way to start a workflow (ids, task queue, search attributes from its contract). */
  workflows: WorkflowStarter;
  /** The payload codec the client (and the worker) use; the codec endpoint serves it to operators. */
  codec: EncryptionCodec;
}

/** The client: TLS and API key from configuration, and every payload encrypted (`codec.ts`). */
export async function connectTemporal(
  config: TemporalConnectionConfig &
    PayloadCodecConfig &
    Pick<Config, 'TEMPORAL_NAMESPACE' | 'TEMPORAL_TASK_QUEUE' | 'TEMPORAL_RECONNECT_BACKOFF_MAX_MS'>,
): Promise<TemporalHandle> {
  const connection = await Connection.connect({
    ...temporalConnectionOptions(config),
    // Finds a returned server within TEMPORAL_RECONNECT_BACKOFF_MAX_MS rather than gRPC's up to 2 minutes.
    channelArgs: temporalChannelArgs(config),
    // The SDK's default retries, with the failures that outlast them counted (weft_temporal_client_errors_total).
    interceptors: [temporalClientErrors, makeGrpcRetryInterceptor(defaultGrpcRetryOptions())],
  });
  const codec = createPayloadCodec(config);
  const client = new Client({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    dataConverter: dataConverter(codec),
    // Off unless the OTEL_* variables turned tracing on: then each start carries the request's trace.
    interceptors: temporalClientTracing(),
  });
  return {
    connection,
    client,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    workflows: new WorkflowStarter(client, config.TEMPORAL_TASK_QUEUE),
    codec,
  };
}

/** Registers Weft's search attributes; a server that already has them answers ALREADY_EXISTS. */
export async function ensureSearchAttributes(handle: TemporalHandle): Promise<void> {
  const existing = await handle.connection.operatorService.listSearchAttributes({ namespace: handle.namespace });
  const missing = CUSTOM_SEARCH_ATTRIBUTES.filter((key) => existing.customAttributes?.[key.name] === undefined);
  if (missing.length === 0) return;
  try {
    await handle.connection.operatorService.addSearchAttributes({
      namespace: handle.namespace,
      searchAttributes: Object.fromEntries(
        missing.map((key) => [
          key.name,
          key.type === SearchAttributeType.KEYWORD_LIST
            ? temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST
            : temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
        ]),
      ),
    });
  } catch (error) {
    // gRPC ALREADY_EXISTS (6): another process registered it first.
    if ((error as { code?: number }).code !== 6) throw error;
  }
}

/** Readiness: the frontend answers a cheap call within the deadline. */
export async function temporalAnswers(handle: TemporalHandle, timeoutMs = 2000): Promise<boolean> {
  try {
    await handle.connection.withDeadline(Date.now() + timeoutMs, () =>
      handle.connection.workflowService.getSystemInfo({}),
    );
    return true;
  } catch {
    return false;
  }
}
