/**
 * `npm run bench -- prompt [--seconds 4]`
 *
 * Start-to-result latency and sustained throughput of update, query and both prompts (local
 * provider) through HTTP, next to anchors on the same Temporal server, measured interleaved: a
 * workflow with no activities, one with three activities that return at once, and the prompt
 * workflow started with the Temporal client directly (the API's own overhead is the difference).
 * Also: how long a worker takes to be ready with the prebuilt workflow bundle.
 */

import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import { createApp } from '../src/app/http';
import { createSealer } from '../src/platform/crypto/sealer';
import { createPayloadCodec, dataConverter } from '../src/platform/temporal/codec';
import { ensureSearchAttributes } from '../src/platform/temporal/connection';
import { workspaceSearchAttributes } from '../src/platform/temporal/search-attributes';
import { requestHash, sourceHash } from '../src/prompt/summary';
import { createWorker } from '../workers/worker';
import { anchorActivities } from './anchors/activities';
import type { Measurement } from './lib/measure';
import { markdownTable, measure, numberOption } from './lib/measure';
import { bootBenchService, serveLocally } from './lib/servers';

const PROMPTS = {
  update: (i: number) =>
    `Person${i} Example works at Company${i % 50} Holdings. Person${i} Example lives in City${i % 20}.`,
  query: (i: number) => `Who is Person${i % 200} Example?`,
  both: (i: number) => `Person${i} Example works at Company${i % 50} Holdings. Where does Person${i} Example work?`,
} as const;

export async function run(args: string[]): Promise<void> {
  const seconds = numberOption(args, 'seconds', 4);
  const service = await bootBenchService({ queue: 'weft-bench-prompt', settings: { OPENAI_API_KEY: '' } });
  const { config, runtime, provisioning } = service;
  await ensureSearchAttributes(runtime.temporal);
  const tenant = await provisioning.bootstrap({
    credits: 1_000_000_000,
    name: 'weft-bench-prompt',
  });

  // Worker readiness with the prebuilt bundle (built before timing, as `npm start` caches it).
  const readyStarted = performance.now();
  const { worker, connection } = await createWorker({
    config,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities: createActivities(runtime),
    logLevel: 'error',
  });
  const workerReadyMs = performance.now() - readyStarted;
  const running = worker.run();

  const anchorQueue = `${config.TEMPORAL_TASK_QUEUE}-anchor`;
  const anchorWorker = await Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: anchorQueue,
    workflowBundle: await bundleWorkflowCode({
      workflowsPath: path.join(__dirname, 'anchors/workflows.ts'),
      logger: { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} },
    }),
    activities: anchorActivities,
    // The same codec as Weft's worker, so the anchor pays the same encryption cost.
    dataConverter: dataConverter(createPayloadCodec(config)),
  });
  const anchorRunning = anchorWorker.run();

  const { server, url: baseUrl } = await serveLocally(createApp(runtime));

  const { client } = runtime.temporal;
  const sealer = createSealer(config.WEFT_ENCRYPTION_KEY);
  const httpPrompt = (intent: keyof typeof PROMPTS) => async (i: number) => {
    const response = await fetch(`${baseUrl}/v1/ontology/prompt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: PROMPTS[intent](i), force_intent: intent }),
    });
    if (response.status !== 200) throw new Error(`prompt answered ${response.status}: ${await response.text()}`);
    await response.arrayBuffer();
  };
  const directPrompt = async (i: number) => {
    const correlationId = randomUUID();
    const prompt = PROMPTS.query(i);
    await client.workflow.execute('promptWorkflow', {
      workflowId: `prompt-${correlationId}`,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      typedSearchAttributes: workspaceSearchAttributes(tenant.workspace_id),
      args: [
        {
          workspaceId: tenant.workspace_id,
          correlationId,
          prompt: sealer.seal(prompt, { workspaceId: tenant.workspace_id, correlationId }),
          sourceHash: sourceHash(prompt),
          requestHash: requestHash({ endpoint: 'prompt', prompt, forceIntent: 'query', promptKind: 'markdown_text' }),
          promptKind: 'markdown_text',
          forceIntent: 'query',
          startedAtMs: Date.now(),
        },
      ],
    });
  };
  const anchor = (workflowType: string) => async () => {
    await client.workflow.execute(workflowType, {
      workflowId: `anchor-${randomUUID()}`,
      taskQueue: anchorQueue,
      args: [],
    });
  };

  const rows: { subject: Measurement; anchor?: Measurement }[] = [];
  const extra: string[] = [];
  for (const concurrency of [1, 4]) {
    const options = { concurrency, durationMs: seconds * 1000 };
    const empty = await measure('workflow, no activities', anchor('emptyAnchorWorkflow'), options);
    const three = await measure('workflow, 3 instant activities', anchor('threeActivitiesAnchorWorkflow'), options);
    rows.push({ subject: empty }, { subject: three, anchor: empty });
    const direct = await measure('query prompt, Temporal client directly', directPrompt, options);
    rows.push({ subject: direct, anchor: three });
    for (const intent of ['update', 'query', 'both'] as const) {
      const subject = await measure(`${intent} prompt via HTTP`, httpPrompt(intent), options);
      rows.push({ subject, anchor: three });
      if (intent === 'query') {
        extra.push(
          `| ${concurrency} | ${subject.p50.toFixed(1)} | ${direct.p50.toFixed(1)} | ` +
            `${(subject.p50 - direct.p50).toFixed(1)} | ` +
            `${(subject.p50 / three.p50).toFixed(2)} | ${(subject.rps / empty.rps).toFixed(2)} |`,
        );
      }
    }
  }

  console.log(`\n## Prompt pipeline (local provider), ${seconds} s per point\n`);
  console.log(markdownTable(rows));
  console.log(
    '\n| clients | query via HTTP p50 ms | via client p50 ms | API overhead ms | ' +
      'latency ÷ 3-activity anchor | req/s ÷ empty-workflow anchor |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const line of extra) console.log(line);
  console.log(`\nWorker ready with the prebuilt bundle: ${workerReadyMs.toFixed(0)} ms`);

  server.close();
  worker.shutdown();
  anchorWorker.shutdown();
  await Promise.all([running, anchorRunning]);
  await connection.close();
  await service.stop();
}
