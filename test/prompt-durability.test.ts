import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { createApp } from '../src/app/http';
import { SCOPES } from '../src/platform/auth/scopes';
import { createSealer } from '../src/platform/crypto/sealer';
import { WorkflowStarter } from '../src/platform/temporal/starter';
import { createPromptApi } from '../src/prompt/dispatcher';
import { eventually } from './helpers/eventually';
import type { FakeOpenAI } from './helpers/fake-openai';
import { startFakeOpenAI } from './helpers/fake-openai';
import { as } from './helpers/http';
import { terminateTaskQueue } from './helpers/leftovers';
import { getStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';
import type { WeftProcess } from './helpers/weft-process';
import { startWorkerProcess } from './helpers/weft-process';

describe('prompt durability: a worker killed mid-pipeline', function () {
  this.timeout(90_000);
  let fake: FakeOpenAI;
  const workers: WeftProcess[] = [];
  const taskQueue = `weft-durability-${randomUUID().slice(0, 8)}`;

  before(async () => {
    fake = await startFakeOpenAI();
  });
  after(async () => {
    for (const worker of workers) await worker.kill();
    // The killed worker's queue still holds what its process started (embedding, person resolution).
    await terminateTaskQueue(getStack().runtime.temporal.client, taskQueue);
    await fake?.close();
  });

  it('finishes the prompt exactly once after a restart: one charge, no duplicate nodes, one audit row', async () => {
    const { runtime, ownerDataSource } = getStack();
    const tenant = await newTenant(20);
    const env = {
      TEMPORAL_TASK_QUEUE: taskQueue,
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: fake.baseUrl,
      OPENAI_MAX_RETRIES: '0',
    };

    let answerCalls = 0;
    fake.scriptChat((schema) => {
      if (schema === 'refined_graph') {
        return {
          content: JSON.stringify({
            nodes: [
              { ref: 'a', type: 'person', name: 'Dorothy Vaughan', properties: [] },
              { ref: 'b', type: 'organization', name: 'NACA', properties: [] },
            ],
            edges: [
              {
                type: 'WORKED_AT',
                source_ref: 'a',
                target_ref: 'b',
                reasoning: 'Stated.',
                evidence: 'Dorothy Vaughan worked at NACA.',
              },
            ],
          }),
        };
      }
      if (schema === 'grounded_answer') {
        answerCalls += 1;
        // The first worker never gets its answer: it is killed while waiting for it.
        return answerCalls === 1
          ? { content: '{}', delayMs: 60_000 }
          : { content: JSON.stringify({ answer: 'At NACA.', citations: [] }) };
      }
      return undefined;
    });

    workers.push(startWorkerProcess(env));
    // The API, as it runs for this workspace, but dispatching to the task queue the child serves.
    const api = createPromptApi({
      uow: runtime.uow,
      temporal: { ...runtime.temporal, taskQueue, workflows: new WorkflowStarter(runtime.temporal.client, taskQueue) },
      sealer: createSealer(getStack().config.WEFT_ENCRYPTION_KEY),
      prompts: runtime.services.prompts,
      deadlineMs: 60_000,
    });
    const principal = {
      userId: tenant.user_id,
      workspaceId: tenant.workspace_id,
      tenantId: tenant.tenant_id,
      scopes: new Set(SCOPES),
      credential: { kind: 'user_jwt' as const },
    };
    const correlationId = randomUUID();
    const result = api.run(
      principal,
      {
        prompt: 'Dorothy Vaughan worked at NACA. Where did she work?',
        force_intent: 'both',
        prompt_kind: 'markdown_text',
      },
      correlationId,
    );

    await eventually(() => answerCalls === 1, { what: 'the first worker to reach the answer step', timeoutMs: 45_000 });
    await workers[0]!.kill();
    workers.push(startWorkerProcess(env));

    const finished = await result;
    expect(finished.intent).to.equal('both');
    expect(finished.answer).to.equal('At NACA.');
    expect(answerCalls).to.equal(2);

    const charges = await ownerDataSource.query(
      `SELECT amount FROM credit_ledger WHERE workspace_id = $1 AND kind LIKE 'ontology.prompt.%'`,
      [tenant.workspace_id],
    );
    expect(charges.map((row: { amount: number }) => row.amount)).to.deep.equal([-7]);
    const nodes = await ownerDataSource.query(
      `SELECT name FROM nodes WHERE workspace_id = $1 AND NOT is_deleted ORDER BY name`,
      [tenant.workspace_id],
    );
    expect(nodes.map((row: { name: string }) => row.name)).to.deep.equal(['Dorothy Vaughan', 'NACA']);
    const audits = await ownerDataSource.query(`SELECT status FROM prompt_runs WHERE correlation_id = $1`, [
      correlationId,
    ]);
    expect(audits).to.deep.equal([{ status: 'ok' }]);
  });
});

describe('prompt deadlines: no worker takes the prompt', function () {
  this.timeout(30_000);

  it('answers 504 after PROMPT_DEADLINE_MS; the execution has a timeout; the run settles once it closes', async () => {
    const { runtime, ownerDataSource, config } = getStack();
    const tenant = await newTenant(20);
    // The API of this stack, dispatching to a task queue that no worker serves, with a short deadline.
    const taskQueue = `weft-unserved-${randomUUID().slice(0, 8)}`;
    const promptApi = createPromptApi({
      uow: runtime.uow,
      temporal: { ...runtime.temporal, taskQueue, workflows: new WorkflowStarter(runtime.temporal.client, taskQueue) },
      sealer: createSealer(config.JWT_SECRET),
      prompts: runtime.services.prompts,
      deadlineMs: 1500,
    });
    const server = createApp({ ...runtime, services: { ...runtime.services, promptApi } }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const correlationId = randomUUID();
    const handle = runtime.temporal.client.workflow.getHandle(`prompt-${correlationId}`);
    try {
      const started = Date.now();
      const response = await as(tenant.api_key, baseUrl).post(
        '/v1/ontology/prompt',
        { prompt: 'Ada Lovelace works at Analytical Engines Ltd.' },
        { 'x-correlation-id': correlationId },
      );
      expect(response.status).to.equal(504);
      expect(response.body.detail).to.match(/retry with the same X-Correlation-Id/);
      // It waited out the deadline, and no longer: the execution it gave up on is still running (below).
      // A lower bound only: an upper bound in milliseconds fails on a loaded machine, not on a bug.
      expect(Date.now() - started).to.be.at.least(1500);

      const description = await handle.describe();
      expect(description.status.name).to.equal('RUNNING');
      expect(Number(description.raw.executionConfig?.workflowExecutionTimeout?.seconds)).to.equal(600);

      // Standing in for the execution timeout, which closes it after ten minutes without compensation.
      await handle.terminate('test: the execution timeout');
      const reconciler = runtime.services.promptReconciler;
      const runs = (await reconciler.candidates(tenant.workspace_id, 0)).filter(
        (run) => run.correlation_id === correlationId,
      );
      expect(runs).to.have.length(1);
      expect(await reconciler.settle(tenant.workspace_id, runs[0]!)).to.equal(true);
    } finally {
      await handle.terminate('test cleanup').catch(() => undefined);
      server.close();
    }
    expect(await creditBalance(tenant.tenant_id)).to.equal(20);
    const audits = await ownerDataSource.query(
      `SELECT status, error_code, credits_used FROM prompt_runs WHERE correlation_id = $1`,
      [correlationId],
    );
    expect(audits).to.deep.equal([
      { status: 'error', error_code: 'WorkflowClosedWithoutCompensation', credits_used: 0 },
    ]);
  });
});
