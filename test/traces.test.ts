import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { deleteMaintenanceSchedules } from '../src/app/schedules';
import { CORRELATION_ID_ATTRIBUTE } from '../src/platform/telemetry/tracing';
import { loadWorkflowBundle } from '../workers/bundle';
import { eventually } from './helpers/eventually';
import type { FakeOpenAI } from './helpers/fake-openai';
import { startFakeOpenAI } from './helpers/fake-openai';
import { as } from './helpers/http';
import { terminateTaskQueue } from './helpers/leftovers';
import { succeeded } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';
import type { WeftProcess } from './helpers/weft-process';
import { startApiProcess, startWorkerProcess } from './helpers/weft-process';

/** A span as the OTLP/HTTP JSON exporter sends it (ids in hex). */
interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: { stringValue?: string } }[];
}

const SERVER_KIND = 2;

/** A collector on loopback: what `POST /v1/traces` receives, kept in memory. */
async function startReceiver(): Promise<{ endpoint: string; spans: ReceivedSpan[]; close(): void }> {
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

const attribute = (span: ReceivedSpan, key: string) => span.attributes?.find((a) => a.key === key)?.value.stringValue;

/** The names from `span` up to its trace's root, by parent ids; undefined when a parent never arrived. */
function ancestry(spans: ReceivedSpan[], span: ReceivedSpan): ReceivedSpan[] | undefined {
  const byId = new Map(spans.filter((s) => s.traceId === span.traceId).map((s) => [s.spanId, s]));
  const chain = [span];
  for (let at = span; at.parentSpanId; ) {
    const parent = byId.get(at.parentSpanId);
    if (!parent) return undefined;
    chain.push(parent);
    at = parent;
  }
  return chain;
}

/**
 * A database statement whose chain of parents runs, span by span, through an activity, its scheduling
 * in the workflow, the workflow, its start and the HTTP request that carries `correlationId`: the
 * whole of one trace. Answers the chain's names, from the statement up.
 */
function fullChain(spans: ReceivedSpan[], correlationId: string, workflowType: string): string[] | undefined {
  for (const statement of spans.filter((s) => attribute(s, 'db.system') === 'postgresql')) {
    const chain = ancestry(spans, statement);
    if (!chain) continue;
    const names = chain.map((s) => s.name);
    const run = names.findIndex((name) => name.startsWith('RunActivity:'));
    if (run < 0) continue;
    const activity = names[run]!.slice('RunActivity:'.length);
    const expected = [`StartActivity:${activity}`, `RunWorkflow:${workflowType}`, `StartWorkflow:${workflowType}`];
    if (expected.some((name, at) => names[run + 1 + at] !== name)) continue;
    const request = chain.slice(run + 4).find((s) => s.kind === SERVER_KIND);
    if (request && attribute(request, CORRELATION_ID_ATTRIBUTE) === correlationId) return names;
  }
  return undefined;
}

/** Waits for `fullChain`, naming what did arrive when it does not. */
async function waitForChain(spans: ReceivedSpan[], correlationId: string, workflowType: string) {
  try {
    return await eventually(() => fullChain(spans, correlationId, workflowType), {
      what: `a full ${workflowType} trace`,
      timeoutMs: 30_000,
      intervalMs: 250,
    });
  } catch (error) {
    const names = [...new Set(spans.map((s) => s.name))].sort();
    throw new Error(`${(error as Error).message}; span names received: ${names.join(', ')}`);
  }
}

describe('traces: OTLP/HTTP from the API through Temporal to SQL (real processes)', function () {
  this.timeout(180_000);
  const taskQueue = `weft-traces-${randomUUID().slice(0, 8)}`;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let fake: FakeOpenAI;
  let api: WeftProcess | undefined;
  let worker: WeftProcess | undefined;

  before(async () => {
    // The worker's tracing bundle, built here once (cached by file) so the worker process starts at once.
    await loadWorkflowBundle({
      tracingModule: require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
    });
    receiver = await startReceiver();
    fake = await startFakeOpenAI();
    const env = {
      TEMPORAL_TASK_QUEUE: taskQueue,
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: fake.baseUrl,
      OPENAI_MAX_RETRIES: '0',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_SERVICE_NAME: 'weft-traces-test',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
    worker = startWorkerProcess(env);
    api = await startApiProcess(env);
    await deleteMaintenanceSchedules(getStack().runtime.temporal.client, taskQueue);
  });
  after(async () => {
    await worker?.kill();
    await api?.kill();
    await deleteMaintenanceSchedules(getStack().runtime.temporal.client, taskQueue);
    await terminateTaskQueue(getStack().runtime.temporal.client, taskQueue);
    await fake?.close();
    receiver?.close();
  });

  it('a prompt: HTTP request → StartWorkflow → RunWorkflow → activity → its SQL, with the correlation id', async () => {
    fake.scriptChat((schema) => {
      if (schema === 'refined_graph') {
        const nodes = [{ ref: 'a', type: 'person', name: 'Grace Hopper', properties: [] }];
        return { content: JSON.stringify({ nodes, edges: [] }) };
      }
      if (schema === 'grounded_answer') return { content: JSON.stringify({ answer: 'The Navy.', citations: [] }) };
      return undefined;
    });
    const tenant = await newTenant(20);
    const correlationId = randomUUID();
    const response = await as(tenant.api_key, api!.baseUrl).post(
      '/v1/ontology/prompt',
      { prompt: 'Grace Hopper served in the Navy. Where did she serve?', force_intent: 'both' },
      { 'x-correlation-id': correlationId },
    );
    expect(response.status, JSON.stringify(response.body)).to.equal(200);

    const chain = await waitForChain(receiver.spans, correlationId, 'promptWorkflow');
    expect(chain).to.include('RunWorkflow:promptWorkflow');
    // One request, one server span carrying its correlation id.
    const http = receiver.spans.filter((s) => attribute(s, CORRELATION_ID_ATTRIBUTE) === correlationId);
    expect(http).to.have.length(1);
  });

  it('a run with one step: HTTP dispatch → StartWorkflow → RunWorkflow → the step activity → its SQL', async () => {
    const tenant = await newTenant(20);
    const client = as(tenant.api_key, api!.baseUrl);
    const correlationId = randomUUID();
    const dispatched = await client.post(
      '/v1/runs',
      { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance' }] } },
      { 'x-correlation-id': correlationId },
    );
    expect(dispatched.status, JSON.stringify(dispatched.body)).to.equal(202);
    await succeeded(client, dispatched.body.execution_id);

    const chain = await waitForChain(receiver.spans, correlationId, 'runWorkflow');
    expect(chain).to.include('RunWorkflow:runWorkflow');
  });
});
