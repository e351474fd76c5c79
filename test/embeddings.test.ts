import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createActivities } from '../activities';
import { MAINTENANCE_SCHEDULES } from '../src/app/schedules';
import { reserveCredits } from '../src/credits/repository';
import { embeddingHandlers, embeddingQueue } from '../src/embeddings/outbox-handler';
import { createEmbeddingService, EMBEDDING_ERRORS } from '../src/embeddings/service';
import {
  embeddingBackfillWorkflow,
  embeddingQueueWorkflow,
  embeddingQueueWorkflowId,
} from '../src/embeddings/workflow';
import { createNodeInTransaction } from '../src/graph/writes';
import { loadConfig } from '../src/platform/config';
import { localEmbedding } from '../src/platform/llm/embedding/local';
import { createOpenAIEmbeddingProvider } from '../src/platform/llm/embedding/openai';
import { WORKSPACE_ID_ATTRIBUTE } from '../src/platform/temporal/search-attributes';
import { createWorker } from '../workers/worker';
import * as workflows from '../workflows';
import { eventually } from './helpers/eventually';
import { startFakeOpenAI } from './helpers/fake-openai';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';

interface NodeState {
  id: string;
  name: string;
  has_embedding: boolean;
  embedding_error: string | null;
  embedding: string | null;
}

const nodeStates = (ids: string[]): Promise<NodeState[]> =>
  getStack().ownerDataSource.query(
    `SELECT id, name, has_embedding, embedding_error, embedding::text AS embedding FROM nodes WHERE id = ANY($1::uuid[])
     ORDER BY name`,
    [ids],
  );

/** Polls until every node is settled (a vector, or a recorded reason), or fails after `ms`. */
async function settled(
  ids: string[],
  done: (node: NodeState) => boolean = (n) => n.has_embedding || n.embedding_error !== null,
  ms = 20_000,
) {
  let states: NodeState[] = [];
  return eventually(
    async () => {
      states = await nodeStates(ids);
      return states.length === ids.length && states.every(done) && states;
    },
    { what: 'nodes to settle', timeoutMs: ms },
  ).catch(() => {
    throw new Error(
      `nodes not settled: ${JSON.stringify(states.map((s) => [s.name, s.has_embedding, s.embedding_error]))}`,
    );
  });
}

const charges = (tenantId: string) =>
  getStack().ownerDataSource.query(
    `SELECT id, amount, idempotency_key, linked_event_id FROM credit_ledger WHERE tenant_id = $1
     AND kind = 'worker.embed_node' ORDER BY created_at`,
    [tenantId],
  );

const parseVector = (text: string | null) => (text ? (JSON.parse(text) as number[]) : []);
const closeTo = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => Math.abs(x - b[i]!) < 1e-6);

/** Several nodes created in one transaction, as a prompt's extraction does; then the outbox fast path. */
async function createNodes(workspaceId: string, names: string[]): Promise<string[]> {
  const { runtime } = getStack();
  const rows = await runtime.uow({ workspaceId }, async (m) => {
    const created = [];
    for (const name of names) created.push(await createNodeInTransaction(m, workspaceId, { type: 'topic', name }));
    return created;
  });
  runtime.outbox.kick(workspaceId);
  return rows.map((row) => row.id);
}

describe('asynchronous node embedding', function () {
  this.timeout(60_000);

  it('embeds a node created over HTTP, flips has_embedding and charges worker.embed_node once', async () => {
    const t = await newTenant(10);
    const created = await as(t.api_key).post('/v1/ontology/nodes', { type: 'person', name: 'Ada Lovelace' });
    expect(created.status).to.equal(201);
    expect(created.body.has_embedding).to.equal(false);
    const [state] = await settled([created.body.id]);
    expect(state!.has_embedding).to.equal(true);
    expect(state!.embedding_error).to.equal(null);
    expect(closeTo(parseVector(state!.embedding), localEmbedding('Ada Lovelace'))).to.equal(true);
    const fetched = await as(t.api_key).get(`/v1/ontology/nodes/${created.body.id}`);
    expect(fetched.body.has_embedding).to.equal(true);
    const rows = await charges(t.tenant_id);
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ amount: -1 });
    expect(rows[0].idempotency_key).to.contain(created.body.id);
    expect(await creditBalance(t.tenant_id)).to.equal(9);
    // Found by vector search once embedded.
    const search = await as(t.api_key).post('/v1/ontology/search', { q: 'ada lovelace', mode: 'vector' });
    expect(search.body.results.map((r: any) => r.node.id)).to.deep.equal([created.body.id]);
  });

  it('embeds a burst of nodes in batches, in a workflow that carries the workspace search attribute', async () => {
    const t = await newTenant(100);
    const names = Array.from({ length: 20 }, (_, i) => `Batch topic ${i}`);
    const ids = await createNodes(t.workspace_id, names);
    const states = await settled(ids);
    expect(states.every((s) => s.has_embedding)).to.equal(true);
    expect(await charges(t.tenant_id)).to.have.length(20);
    expect(await creditBalance(t.tenant_id)).to.equal(80);

    const handle = getStack().runtime.temporal.client.workflow.getHandle(embeddingQueueWorkflowId(t.workspace_id));
    const description = await handle.describe();
    expect(description.type).to.equal(embeddingQueueWorkflow.type);
    expect(description.typedSearchAttributes.get(WORKSPACE_ID_ATTRIBUTE)).to.equal(t.workspace_id);
    const history = await handle.fetchHistory();
    const embedCalls = (history.events ?? []).filter(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'embedAndStoreNodes',
    );
    expect(embedCalls.length).to.be.at.least(1).and.at.most(4);
  });

  it('leaves nodes unembedded with the reason when the tenant runs out of credits', async () => {
    const t = await newTenant(2);
    const ids = await createNodes(t.workspace_id, ['Out one', 'Out two', 'Out three', 'Out four']);
    const states = await settled(ids);
    expect(states.filter((s) => s.has_embedding)).to.have.length(2);
    const refused = states.filter((s) => !s.has_embedding);
    expect(refused).to.have.length(2);
    for (const node of refused) expect(node.embedding_error).to.equal(EMBEDDING_ERRORS.insufficientCredits);
    expect(await creditBalance(t.tenant_id)).to.equal(0);
    expect(await charges(t.tenant_id)).to.have.length(2);
  });

  it('re-embeds a node when its name changes (node.updated with name_changed), not otherwise', async () => {
    const t = await newTenant(10);
    const created = await as(t.api_key).post('/v1/ontology/nodes', { type: 'project', name: 'Project Apollo' });
    await settled([created.body.id]);
    const patched = await as(t.api_key).patch(`/v1/ontology/nodes/${created.body.id}`, { properties: { phase: 2 } });
    expect(patched.status).to.equal(200);
    const renamed = await as(t.api_key).patch(`/v1/ontology/nodes/${created.body.id}`, { name: 'Project Artemis' });
    expect(renamed.status).to.equal(200);
    const [state] = await settled([created.body.id], (n) =>
      closeTo(parseVector(n.embedding), localEmbedding('Project Artemis')),
    );
    expect(state!.has_embedding).to.equal(true);
    // One charge for the creation, one for the rename; the properties change cost nothing.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await charges(t.tenant_id)).to.have.length(2);
    expect(await creditBalance(t.tenant_id)).to.equal(8);
  });

  it('absorbs a redelivered event: one embedding, one charge', async () => {
    const t = await newTenant(10);
    const [row] = await getStack().ownerDataSource.query(
      `INSERT INTO nodes (workspace_id, type, name) VALUES ($1, 'topic', 'Redelivered node') RETURNING id`,
      [t.workspace_id],
    );
    const event = {
      id: String(1e12 + Math.floor(Math.random() * 1e9)),
      workspace_id: t.workspace_id,
      event_type: 'node.created',
      aggregate_id: row.id,
      payload: { node_id: row.id, type: 'topic', name: 'Redelivered node' },
    };
    const handler = embeddingHandlers(getStack().runtime.temporal).created;
    await handler.handle(event);
    await handler.handle(event);
    await settled([row.id]);
    await handler.handle(event);
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(await charges(t.tenant_id)).to.have.length(1);
    expect(await creditBalance(t.tenant_id)).to.equal(9);
  });

  it('refunds the batch and records why when the provider keeps failing', async () => {
    const { runtime, config } = getStack();
    const fake = await startFakeOpenAI();
    fake.behave({ kind: 'status', status: 500 });
    const taskQueue = `embed-fail-${randomUUID().slice(0, 8)}`;
    const provider = createOpenAIEmbeddingProvider(
      loadConfig({ OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, OPENAI_MAX_RETRIES: '0' }),
    );
    const embeddings = createEmbeddingService({
      uow: runtime.uow,
      provider,
      logger: runtime.logger,
      enqueue: embeddingQueue(runtime.temporal),
    });
    // A second worker whose only difference is a provider that always answers 500.
    const { worker, connection } = await createWorker({
      config,
      taskQueue,
      activities: createActivities({ ...runtime, services: { ...runtime.services, embeddings } }),
    });
    const running = worker.run();
    try {
      const t = await newTenant(5);
      const [row] = await getStack().ownerDataSource.query(
        `INSERT INTO nodes (workspace_id, type, name) VALUES ($1, 'topic', 'Doomed node') RETURNING id`,
        [t.workspace_id],
      );
      const handle = await runtime.temporal.client.workflow.start(workflows.embeddingQueueWorkflow, {
        taskQueue,
        workflowId: `embed-fail-${row.id}`,
        args: [{ workspaceId: t.workspace_id, pending: [{ nodeId: row.id, eventId: 'e1' }] }],
      });
      const [state] = await settled([row.id], (n) => n.embedding_error !== null, 30_000);
      expect(state!.embedding_error).to.equal(EMBEDDING_ERRORS.providerFailed);
      expect(state!.has_embedding).to.equal(false);
      const rows = await charges(t.tenant_id);
      expect(rows.map((r: any) => r.amount).sort()).to.deep.equal([-1, 1]);
      expect(rows.find((r: any) => r.amount === 1).linked_event_id).to.equal(rows.find((r: any) => r.amount === -1).id);
      expect(await creditBalance(t.tenant_id)).to.equal(5);
      expect(fake.requests.length).to.be.at.least(3);
      await handle.terminate('test done');
    } finally {
      worker.shutdown();
      await running;
      await connection.close();
      await fake.close();
    }
  });
});

describe('embedding requests are never lost, and charges settle with their vectors', function () {
  this.timeout(90_000);

  const insertNodes = async (workspaceId: string, names: string[]): Promise<string[]> => {
    const rows: { id: string }[] = await getStack().ownerDataSource.query(
      `INSERT INTO nodes (workspace_id, type, name) SELECT $1, 'topic', unnest($2::text[]) RETURNING id`,
      [workspaceId, names],
    );
    return rows.map((row) => row.id);
  };
  const backdate = (ids: string[], days: number) =>
    getStack().ownerDataSource.query(
      `UPDATE nodes SET created_at = created_at - make_interval(days => $2) WHERE id = ANY($1::uuid[])`,
      [ids, days],
    );
  /** A backfill run as the schedule starts one, over nodes older than a day (so only this test's). */
  const runBackfill = () => {
    const { runtime, config } = getStack();
    return runtime.temporal.client.workflow.execute(embeddingBackfillWorkflow.type, {
      args: [{ minAgeSeconds: 86_400 }],
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowId: `embedding-backfill-test-${randomUUID()}`,
    });
  };

  it('registers the backfill as a schedule', () => {
    const schedule = MAINTENANCE_SCHEDULES.find((s) => s.name === 'embedding-backfill');
    expect(schedule?.workflow.type).to.equal(embeddingBackfillWorkflow.type);
  });

  it('the backfill run embeds a node whose outbox event was marked dispatched but never embedded', async () => {
    const { runtime, ownerDataSource } = getStack();
    const t = await newTenant(10);
    const node = await runtime.uow({ workspaceId: t.workspace_id }, (m) =>
      createNodeInTransaction(m, t.workspace_id, { type: 'topic', name: 'Lost request' }),
    );
    // The event left the outbox, but the queue that took it failed before embedding it.
    await ownerDataSource.query(`UPDATE outbox SET dispatched_at = now(), attempts = 1 WHERE aggregate_id = $1`, [
      node.id,
    ]);
    await backdate([node.id], 2);
    expect((await nodeStates([node.id]))[0]).to.include({ has_embedding: false, embedding_error: null });

    const result = await runBackfill();
    expect(result.queued).to.be.at.least(1);
    const [state] = await settled([node.id]);
    expect(state).to.include({ has_embedding: true, embedding_error: null });
    expect(closeTo(parseVector(state!.embedding), localEmbedding('Lost request'))).to.equal(true);
    expect(await charges(t.tenant_id)).to.have.length(1);
    expect(await creditBalance(t.tenant_id)).to.equal(9);
  });

  it('leaves a node refused for credits until the tenant can pay, then embeds it', async () => {
    const { ownerDataSource } = getStack();
    const t = await newTenant(0);
    const [id] = await createNodes(t.workspace_id, ['Refused node']);
    await settled([id!], (n) => n.embedding_error === EMBEDDING_ERRORS.insufficientCredits);
    await backdate([id!], 2);

    await runBackfill();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await nodeStates([id!]))[0]).to.include({
      has_embedding: false,
      embedding_error: EMBEDDING_ERRORS.insufficientCredits,
    });

    await ownerDataSource.query(`UPDATE tenants SET credit_balance = 1 WHERE id = $1`, [t.tenant_id]);
    await runBackfill();
    const [state] = await settled([id!], (n) => n.has_embedding);
    expect(state!.embedding_error).to.equal(null);
    expect(await creditBalance(t.tenant_id)).to.equal(0);
  });

  it('reaches continue-as-new and keeps its pending requests', async () => {
    const { runtime } = getStack();
    const t = await newTenant(100);
    const ids = await insertNodes(
      t.workspace_id,
      Array.from({ length: 70 }, (_, i) => `Carried topic ${i}`),
    );
    // One batch per run: the first run embeds 64 and carries the other 6 into the next.
    const input = {
      workspaceId: t.workspace_id,
      pending: ids.map((nodeId) => ({ nodeId, eventId: 'carried' })),
      batchesPerRun: 1,
    };
    const handle = await runtime.temporal.client.workflow.start(
      embeddingQueueWorkflow.type,
      runtime.temporal.workflows.options(embeddingQueueWorkflow, [input]),
    );
    const states = await settled(ids, (n) => n.has_embedding, 45_000);
    expect(states).to.have.length(70);
    const first = await runtime.temporal.client.workflow
      .getHandle(handle.workflowId, handle.firstExecutionRunId)
      .describe();
    expect(first.status.name).to.equal('CONTINUED_AS_NEW');
    expect(await charges(t.tenant_id)).to.have.length(70);
    expect(await creditBalance(t.tenant_id)).to.equal(30);
    await handle.terminate('test done');
  });

  it('a full queue hands requests back to the outbox, and they are embedded when they arrive again', async () => {
    const { runtime, ownerDataSource } = getStack();
    const t = await newTenant(100);
    const ids = await insertNodes(t.workspace_id, ['Full one', 'Full two', 'Full three', 'Full four', 'Full five']);
    const handle = await runtime.temporal.workflows.start(embeddingQueueWorkflow, {
      workspaceId: t.workspace_id,
      pending: ids.map((nodeId) => ({ nodeId, eventId: 'burst' })),
      maxPending: 2,
    });
    const handedBack = await eventually(async () => {
      const rows = await ownerDataSource.query(
        `SELECT count(*)::int AS n FROM outbox WHERE workspace_id = $1 AND event_type = 'embedding.requested'`,
        [t.workspace_id],
      );
      return rows[0].n >= 3 && rows[0].n;
    });
    expect(handedBack).to.equal(3);
    // They wait in Postgres for the requeue delay; let it pass, and let the fast path deliver them.
    await eventually(
      async () => {
        await ownerDataSource.query(
          `UPDATE outbox SET next_attempt_at = now() WHERE workspace_id = $1 AND dispatched_at IS NULL`,
          [t.workspace_id],
        );
        runtime.outbox.kick(t.workspace_id);
        const states = await nodeStates(ids);
        return states.every((s) => s.has_embedding) && states;
      },
      { what: 'every node of the burst to be embedded', timeoutMs: 45_000, intervalMs: 500 },
    );
    expect(await charges(t.tenant_id)).to.have.length(5);
    expect(await creditBalance(t.tenant_id)).to.equal(95);
    await handle.terminate('test done');
  });

  it('never refunds a charge whose vector was written, and never writes a vector under a refunded charge', async () => {
    const { runtime } = getStack();
    const activities = createActivities(runtime);
    const t = await newTenant(5);
    const [written, reconciled] = await insertNodes(t.workspace_id, ['Written node', 'Reconciled node']);
    const workspaceId = t.workspace_id;

    // The vector is written, then the activity's completion is lost and the workflow compensates.
    const first = await activities.chargeEmbeddings({ workspaceId, requests: [{ nodeId: written!, eventId: 'w' }] });
    expect(await activities.embedAndStoreNodes({ workspaceId, requests: first.charged })).to.include({ embedded: 1 });
    const compensation = await activities.refundEmbeddings({
      workspaceId,
      requests: first.charged,
      error: EMBEDDING_ERRORS.providerFailed,
    });
    expect(compensation.refunded).to.equal(0);
    expect((await nodeStates([written!]))[0]).to.include({ has_embedding: true, embedding_error: null });
    expect(await creditBalance(t.tenant_id)).to.equal(4);

    // A charge left pending long enough is refunded by the reconcile pass; the late write then writes nothing.
    const second = await activities.chargeEmbeddings({
      workspaceId,
      requests: [{ nodeId: reconciled!, eventId: 'r' }],
    });
    await getStack().ownerDataSource.query(
      `UPDATE credit_ledger SET created_at = created_at - interval '1 hour' WHERE tenant_id = $1
       AND settlement = 'pending'`,
      [t.tenant_id],
    );
    expect((await runtime.services.credits.reconcile({ minAgeSeconds: 1800 })).refunded).to.be.at.least(1);
    expect(await activities.embedAndStoreNodes({ workspaceId, requests: second.charged })).to.include({ embedded: 0 });
    expect((await nodeStates([reconciled!]))[0]).to.include({ has_embedding: false });
    expect(await creditBalance(t.tenant_id)).to.equal(4);
  });

  it('activities act only on the workspace’s own embedding charges and tenant, whatever their input says', async () => {
    const { runtime } = getStack();
    const activities = createActivities(runtime);
    const t = await newTenant(10);
    const other = await newTenant(10);
    const [nodeId] = await insertNodes(t.workspace_id, ['Forged node']);
    // Another kind of charge in the same workspace: a prompt's reservation.
    const prompt = await runtime.uow({ workspaceId: t.workspace_id }, (m) =>
      reserveCredits(m, {
        tenantId: t.tenant_id,
        workspaceId: t.workspace_id,
        kind: 'ontology.prompt.query',
        idempotencyKey: `prompt-${randomUUID()}:reserve`,
      }),
    );
    expect(await creditBalance(t.tenant_id)).to.equal(7);

    // Whoever can start a workflow controls its input: ledger ids, node ids, a tenant.
    const forged: any = {
      workspaceId: t.workspace_id,
      tenantId: other.tenant_id,
      charged: [{ nodeId, ledgerId: prompt.ledger_id }],
      nodeIds: [nodeId],
      requests: [{ nodeId, eventId: 'forged' }],
      error: EMBEDDING_ERRORS.providerFailed,
    };
    await activities.refundEmbeddings(forged);
    expect(await creditBalance(t.tenant_id), 'the prompt’s charge is not refunded').to.equal(7);
    await activities.embedAndStoreNodes(forged);
    expect((await nodeStates([nodeId!]))[0], 'no vector without a charge').to.include({ has_embedding: false });

    await activities.chargeEmbeddings({ ...forged, requests: [{ nodeId, eventId: 'paid' }] });
    expect(await creditBalance(t.tenant_id), 'the workspace’s tenant pays').to.equal(6);
    expect(await creditBalance(other.tenant_id)).to.equal(10);
  });
});
