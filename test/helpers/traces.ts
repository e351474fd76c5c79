import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deleteMaintenanceSchedules } from '../../src/app/schedules';
import { loadWorkflowBundle } from '../../workers/bundle';
import type { FakeOpenAI } from './fake-openai';
import { startFakeOpenAI } from './fake-openai';
import { terminateTaskQueue } from './leftovers';
import { getStack } from './stack';
import type { WeftProcess } from './weft-process';
import { startApiProcess, startWorkerProcess } from './weft-process';

/** A span as the OTLP/HTTP JSON exporter sends it (ids in hex). */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano?: string | number;
  attributes?: { key: string; value: { stringValue?: string; [other: string]: unknown } }[];
}

export const SERVER_KIND = 2;

/** A collector on loopback: what `POST /v1/traces` receives, kept in memory. */
export async function startReceiver(): Promise<{ endpoint: string; spans: ReceivedSpan[]; close(): void }> {
  const spans: ReceivedSpan[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        for (const resource of body.resourceSpans ?? [])
          for (const scope of resource.scopeSpans ?? []) spans.push(...(scope.spans ?? []));
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { endpoint: `http://127.0.0.1:${port}`, spans, close: () => server.close() };
}

export const attribute = (span: ReceivedSpan, key: string) =>
  span.attributes?.find((a) => a.key === key)?.value.stringValue;

/** An attribute's value whatever its type (a token count is an `intValue`), as text. */
export const attributeText = (span: ReceivedSpan, key: string): string | undefined => {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  if (!value) return undefined;
  return value.stringValue ?? String(value.intValue ?? value.doubleValue ?? JSON.stringify(value));
};

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** A Weft API and worker process of their own, tracing to a receiver, with a fake OpenAI as their model. */
export function tracedProcesses(extraEnv: Record<string, string> = {}) {
  const taskQueue = `weft-traces-${randomUUID().slice(0, 8)}`;
  const traced = {} as { receiver: Receiver; fake: FakeOpenAI; api: WeftProcess };
  let worker: WeftProcess | undefined;
  before(async () => {
    // The worker's tracing bundle, built here once (cached by file) so the worker process starts at once.
    await loadWorkflowBundle({
      tracingModule: require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
    });
    traced.receiver = await startReceiver();
    traced.fake = await startFakeOpenAI();
    const env = {
      TEMPORAL_TASK_QUEUE: taskQueue,
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: traced.fake.baseUrl,
      OPENAI_MAX_RETRIES: '0',
      OTEL_EXPORTER_OTLP_ENDPOINT: traced.receiver.endpoint,
      OTEL_SERVICE_NAME: 'weft-traces-test',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      ...extraEnv,
    };
    worker = startWorkerProcess(env);
    traced.api = await startApiProcess(env);
    await deleteMaintenanceSchedules(getStack().runtime.temporal.client, taskQueue);
  });
  after(async () => {
    await worker?.kill();
    await traced.api?.kill();
    await deleteMaintenanceSchedules(getStack().runtime.temporal.client, taskQueue);
    await terminateTaskQueue(getStack().runtime.temporal.client, taskQueue);
    await traced.fake?.close();
    traced.receiver?.close();
  });
  return traced;
}
