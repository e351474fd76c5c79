import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { expect } from 'chai';
import { eventually, sleep } from './helpers/eventually';
import type { ChatScript } from './helpers/fake-openai';
import { as } from './helpers/http';
import { useOpenAIStack } from './helpers/openai-stack';
import { parseSse, postStream } from './helpers/sse';
import { getStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';

const REFINED = JSON.stringify({
  nodes: [
    { ref: 'n1', type: 'person', name: 'Katherine Johnson', properties: [{ key: 'role', value: 'mathematician' }] },
    { ref: 'n2', type: 'organization', name: 'NASA', properties: [] },
  ],
  edges: [
    {
      type: 'WORKED_AT',
      source_ref: 'n1',
      target_ref: 'n2',
      reasoning: 'Stated.',
      evidence: 'Katherine Johnson worked at NASA.',
    },
  ],
});

const owner = () => getStack().ownerDataSource;

describe('prompt pipeline on the OpenAI path (fake OpenAI-compatible server)', function () {
  this.timeout(60_000);
  const openai = useOpenAIStack();

  /**
   * Scripts the fake model: the refiner returns `refined` (unless null), the answerer `answer`.
   * The returned probe says whether the answer step has been reached.
   */
  const scriptAnswer = (answer: NonNullable<ReturnType<ChatScript>>, refined: string | null = REFINED) => {
    let reached = false;
    openai.fake.scriptChat((schema) => {
      if (schema === 'refined_graph' && refined !== null) return { content: refined };
      if (schema === 'grounded_answer') {
        reached = true;
        return answer;
      }
      return undefined;
    });
    return () => reached;
  };
  const client = (token: string) => as(token, openai.stack.baseUrl);
  beforeEach(() => openai.fake.scriptChat(undefined));

  it('classifies, refines and answers with structured outputs validated by zod', async () => {
    const tenant = await newTenant(20);
    let answered: any;
    openai.fake.scriptChat((schema, body) => {
      if (schema === 'intent') return { content: JSON.stringify({ intent: 'both' }) };
      if (schema === 'refined_graph') return { content: REFINED };
      if (schema === 'grounded_answer') {
        answered = JSON.parse(body.messages.at(-1).content);
        const katherine = answered.nodes.find((node: { name: string }) => node.name === 'Katherine Johnson');
        return {
          content: JSON.stringify({
            answer: 'Katherine Johnson worked at NASA.',
            citations: [katherine.id, '00000000-0000-4000-8000-000000000000'],
          }),
        };
      }
      return undefined;
    });
    const response = await client(tenant.api_key).post('/v1/ontology/prompt', {
      prompt: 'Katherine Johnson worked at NASA. Where did she work?',
    });
    expect(response.status).to.equal(200);
    expect(response.body.intent).to.equal('both');
    expect(response.body.nodes_created).to.equal(2);
    expect(response.body.edges_created).to.equal(1);
    expect(response.body.answer).to.equal('Katherine Johnson worked at NASA.');
    const katherine = response.body.nodes.find((node: { name: string }) => node.name === 'Katherine Johnson');
    expect(katherine.properties).to.deep.equal({ role: 'mathematician' });
    // A citation outside the retrieved context is dropped.
    expect(response.body.citations).to.deep.equal([katherine.id]);
    const chatCalls = openai.fake.requests.filter((request) => request.path === '/v1/chat/completions');
    expect(chatCalls.map((call) => call.body.response_format?.type)).to.include('json_schema');
  });

  it('a model answer that fails its schema is a 502, refunded', async () => {
    const tenant = await newTenant(20);
    openai.fake.scriptChat((schema) =>
      schema === 'refined_graph' ? { content: JSON.stringify({ nodes: 'not a list' }) } : undefined,
    );
    const response = await client(tenant.api_key).post('/v1/ontology/prompt', { prompt: 'x', force_intent: 'update' });
    expect(response.status).to.equal(502);
    expect(await creditBalance(tenant.tenant_id)).to.equal(20);
  });

  it('an answer-step failure after persistence undoes the writes, refunds, audits the error, answers 502', async () => {
    const tenant = await newTenant(20);
    scriptAnswer({ status: 500 });
    const response = await client(tenant.api_key).post('/v1/ontology/prompt', {
      prompt: 'Katherine Johnson worked at NASA. Where?',
      force_intent: 'both',
    });
    expect(response.status).to.equal(502);
    expect(response.body.detail).to.include({ error: 'upstream_unavailable' });
    const correlationId = response.headers.get('x-correlation-id');

    const [live] = await owner().query(
      `SELECT (SELECT count(*)::int FROM nodes WHERE workspace_id = $1 AND NOT is_deleted) AS nodes,
              (SELECT count(*)::int FROM nodes WHERE workspace_id = $1 AND is_deleted) AS undone,
              (SELECT count(*)::int FROM edges WHERE workspace_id = $1 AND NOT is_deleted) AS edges`,
      [tenant.workspace_id],
    );
    expect(live).to.deep.equal({ nodes: 0, undone: 2, edges: 0 });

    expect(await creditBalance(tenant.tenant_id)).to.equal(20);
    const ledger: { id: string; amount: number; linked_event_id: string | null; kind: string }[] = await owner().query(
      `SELECT id, amount, linked_event_id, kind FROM credit_ledger WHERE workspace_id = $1
       AND kind LIKE 'ontology.prompt.%' ORDER BY created_at`,
      [tenant.workspace_id],
    );
    expect(ledger.map((row) => row.amount)).to.deep.equal([-7, 7]);
    expect(ledger[1]!.linked_event_id).to.equal(ledger[0]!.id);
    expect(ledger[1]!.kind).to.equal('ontology.prompt.both');

    const [audit] = await owner().query(`SELECT * FROM prompt_runs WHERE correlation_id = $1`, [correlationId]);
    expect(audit).to.include({
      status: 'error',
      error_code: 'UpstreamError',
      credits_used: 0,
      node_count: 0,
      edge_count: 0,
      intent: 'both',
      linked_credit_ledger_id: ledger[0]!.id,
    });
  });

  it('a staged prompt that fails after staging withdraws its change-set and refunds (issue 31 part 4)', async () => {
    const tenant = await newTenant(20);
    scriptAnswer({ status: 500 });
    const response = await client(tenant.api_key).post('/v1/ontology/prompt', {
      prompt: 'Katherine Johnson worked at NASA. Where?',
      force_intent: 'both',
      stage: true,
    });
    expect(response.status).to.equal(502);
    const correlationId = response.headers.get('x-correlation-id');
    const [staged] = await owner().query(`SELECT status, resolved_at FROM change_sets WHERE source_prompt_id = $1`, [
      correlationId,
    ]);
    expect(staged.status).to.equal('withdrawn');
    expect(staged.resolved_at).to.be.an.instanceOf(Date);
    // Nobody is asked to review it, nothing was written, and the prompt was refunded.
    const pending = await client(tenant.api_key).get('/v1/approvals?status=pending');
    expect(pending.body.approvals).to.deep.equal([]);
    const cancelled = await client(tenant.api_key).get('/v1/approvals?status=cancelled');
    expect(cancelled.body.approvals.map((a: { subject: string }) => a.subject)).to.deep.equal(['change_set']);
    const [{ nodes }] = await owner().query(`SELECT count(*)::int AS nodes FROM nodes WHERE workspace_id = $1`, [
      tenant.workspace_id,
    ]);
    expect(nodes).to.equal(0);
    expect(await creditBalance(tenant.tenant_id)).to.equal(20);
  });

  it('a node the model names twice is created once, and undone with the rest', async () => {
    const tenant = await newTenant(20);
    openai.fake.scriptChat((schema) => {
      if (schema === 'refined_graph') {
        return {
          content: JSON.stringify({
            nodes: [
              { ref: 'n1', type: 'person', name: 'Ada', properties: [] },
              { ref: 'n2', type: 'person', name: 'ada', properties: [] },
            ],
            edges: [{ type: 'SAME_AS', source_ref: 'n1', target_ref: 'n2', reasoning: 'r', evidence: 'e' }],
          }),
        };
      }
      if (schema === 'grounded_answer') return { status: 500 };
      return undefined;
    });
    const response = await client(tenant.api_key).post('/v1/ontology/prompt', {
      prompt: 'Ada. Who?',
      force_intent: 'both',
    });
    expect(response.status).to.equal(502);
    const rows = await owner().query(`SELECT name, is_deleted FROM nodes WHERE workspace_id = $1`, [
      tenant.workspace_id,
    ]);
    expect(rows).to.deep.equal([{ name: 'Ada', is_deleted: true }]);
  });

  it('a model that does not answer in time is a 502, refunded', async () => {
    const tenant = await newTenant(20);
    openai.fake.scriptChat((schema) => (schema === 'grounded_answer' ? { content: '{}', delayMs: 4000 } : undefined));
    const started = Date.now();
    const response = await client(tenant.api_key).post('/v1/ontology/prompt', {
      prompt: 'Who?',
      force_intent: 'query',
    });
    expect(response.status).to.equal(502);
    expect(response.body.detail).to.include({ reason: 'timeout' });
    expect(Date.now() - started).to.be.lessThan(4000);
    expect(await creditBalance(tenant.tenant_id)).to.equal(20);
  });

  it('a terminated prompt (no compensation) settles in the reconcile pass: writes undone, refund, audit', async () => {
    const tenant = await newTenant(20);
    const answering = scriptAnswer({ content: '{}', delayMs: 30_000 });
    const correlationId = '5b1e2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
    const pending = client(tenant.api_key).post(
      '/v1/ontology/prompt',
      { prompt: 'Katherine Johnson worked at NASA. Where?', force_intent: 'both' },
      { 'x-correlation-id': correlationId },
    );
    await eventually(answering, { what: 'the answer step', timeoutMs: 20_000, intervalMs: 50 });
    expect(answering()).to.equal(true);
    const { client: temporal } = openai.stack.runtime.temporal;
    await temporal.workflow.getHandle(`prompt-${correlationId}`).terminate('operator stopped it');
    expect((await pending).status).to.equal(500);
    expect(await creditBalance(tenant.tenant_id)).to.equal(13); // the terminated saga refunded nothing

    const result = await temporal.workflow.execute('promptReconcileWorkflow', {
      args: [{ minAgeSeconds: 0 }],
      taskQueue: openai.stack.config.TEMPORAL_TASK_QUEUE,
      workflowId: `prompt-reconcile-test-${correlationId}`,
    });
    expect(result.settled).to.be.at.least(1);
    expect(await creditBalance(tenant.tenant_id)).to.equal(20);
    const [live] = await owner().query(
      `SELECT count(*)::int AS n FROM nodes WHERE workspace_id = $1 AND NOT is_deleted`,
      [tenant.workspace_id],
    );
    expect(live.n).to.equal(0);
    const [audit] = await owner().query(
      `SELECT status, error_code, credits_used FROM prompt_runs WHERE correlation_id = $1`,
      [correlationId],
    );
    expect(audit).to.deep.equal({ status: 'error', error_code: 'WorkflowClosedWithoutCompensation', credits_used: 0 });
    // A second pass finds nothing left to settle for this prompt.
    const again = await temporal.workflow.execute('promptReconcileWorkflow', {
      args: [{ minAgeSeconds: 0 }],
      taskQueue: openai.stack.config.TEMPORAL_TASK_QUEUE,
      workflowId: `prompt-reconcile-test-again-${correlationId}`,
    });
    expect(await creditBalance(tenant.tenant_id)).to.equal(20);
    expect(again.settled).to.equal(0);
  });

  it('the stream reports an error event and refunds when the model fails', async () => {
    const tenant = await newTenant(20);
    openai.fake.scriptChat((schema) => (schema === 'grounded_answer' ? { status: 503 } : undefined));
    const response = await postStream(
      '/v1/ontology/prompt/stream',
      tenant.api_key,
      { prompt: 'Who?' },
      openai.stack.baseUrl,
    );
    expect(response.status).to.equal(200);
    const last = response.events.at(-1)!;
    expect(last.event).to.equal('error');
    expect(last.data).to.include({ status: 502, error_code: 'UpstreamError' });
    expect(response.events.map((event) => event.event)).not.to.include('done');
    expect(await creditBalance(tenant.tenant_id)).to.equal(20);
  });

  it('a stream client that disconnects mid-call is refunded', async () => {
    const tenant = await newTenant(20);
    openai.fake.scriptChat((schema) =>
      schema === 'grounded_answer'
        ? { content: JSON.stringify({ answer: 'late', citations: [] }), delayMs: 1000 }
        : undefined,
    );
    await new Promise<void>((resolve, reject) => {
      const request = http.request(
        new URL(`${openai.stack.baseUrl}/v1/ontology/prompt/stream`),
        { method: 'POST', headers: { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' } },
        (response) => {
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            if (chunk.includes('llm_call')) {
              request.destroy();
              resolve();
            }
          });
        },
      );
      request.on('error', () => undefined);
      request.end(JSON.stringify({ prompt: 'Who?' }));
      setTimeout(() => reject(new Error('never reached llm_call')), 10_000);
    });
    await eventually(async () => (await creditBalance(tenant.tenant_id)) === 20, {
      what: 'the refund',
      timeoutMs: 5000,
    });
    await sleep(1200); // the late answer must not charge again
    const rows = await owner().query(
      `SELECT amount FROM credit_ledger WHERE workspace_id = $1 AND kind LIKE 'ontology.prompt.%' ORDER BY created_at`,
      [tenant.workspace_id],
    );
    expect(rows.map((row: { amount: number }) => row.amount)).to.deep.equal([-3, 3]);
  });

  it('a stream whose key is revoked mid-call ends with a credential_revoked error event and is refunded', async () => {
    const tenant = await newTenant(20);
    const key = await as(tenant.user_jwt).post('/v1/auth/me/api-keys', { name: 'asker', scopes: ['prompt:write'] });
    expect(key.status, key.text).to.equal(201);
    const answering = scriptAnswer({ content: JSON.stringify({ answer: 'late', citations: [] }), delayMs: 1000 }, null);
    const streamed = postStream('/v1/ontology/prompt/stream', key.body.token, { prompt: 'Who?' }, openai.stack.baseUrl);
    await eventually(answering, { what: 'the stream’s model call', intervalMs: 20 });
    expect((await as(tenant.user_jwt).delete(`/v1/auth/me/api-keys/${key.body.id}`)).status).to.equal(200);
    const { status, events } = await streamed;
    expect(status).to.equal(200);
    expect(events.map((event) => event.event)).not.to.include('done');
    expect(events.at(-1)).to.deep.include({ event: 'error' });
    expect(events.at(-1)!.data).to.include({ status: 401, error_code: 'credential_revoked' });
    await eventually(async () => (await creditBalance(tenant.tenant_id)) === 20, { what: 'the refund' });
    const [audit] = await owner().query(
      `SELECT status, error_code, credits_used FROM prompt_runs WHERE workspace_id = $1 AND prompt_kind = 'stream'`,
      [tenant.workspace_id],
    );
    expect(audit).to.deep.equal({ status: 'error', error_code: 'CredentialLapsed', credits_used: 0 });
  });

  it('the reconcile pass never settles a prompt that completed after it was read as a candidate', async () => {
    const tenant = await newTenant(20);
    const answering = scriptAnswer({ content: JSON.stringify({ answer: 'At NASA.', citations: [] }), delayMs: 800 });
    const correlationId = randomUUID();
    const pending = client(tenant.api_key).post(
      '/v1/ontology/prompt',
      { prompt: 'Katherine Johnson worked at NASA. Where?', force_intent: 'both' },
      { 'x-correlation-id': correlationId },
    );
    await eventually(answering, { what: 'the answer step', intervalMs: 20 });
    const { promptReconciler, prompts } = openai.stack.runtime.services;
    // Read while the prompt is still answering: unsettled, as far as the ledger can tell.
    const [candidate] = (await promptReconciler.candidates(tenant.workspace_id, 0)).filter(
      (run) => run.correlation_id === correlationId,
    );
    expect(candidate?.ledger_id).to.be.a('string');
    // It completes between the read and the describe.
    expect((await pending).status).to.equal(200);
    expect(await promptReconciler.settle(tenant.workspace_id, candidate!)).to.equal(false);
    // Under the reservation's lock, which completing also takes, it is found completed.
    const { settled } = await prompts.abandon({
      workspaceId: tenant.workspace_id,
      correlationId,
      promptKind: candidate!.prompt_kind,
      sourceHash: candidate!.source_hash,
      requestHash: candidate!.request_hash,
      intent: candidate!.intent,
      startedAtMs: Date.now(),
      ledgerId: candidate!.ledger_id,
      failure: { code: 'internal', errorClass: 'Test', detail: 'forced' },
    });
    expect(settled).to.equal(false);

    expect(await creditBalance(tenant.tenant_id)).to.equal(13);
    const [live] = await owner().query(
      `SELECT count(*)::int AS n FROM nodes WHERE workspace_id = $1 AND NOT is_deleted`,
      [tenant.workspace_id],
    );
    expect(live.n).to.equal(2);
    const [audit] = await owner().query(`SELECT status FROM prompt_runs WHERE correlation_id = $1`, [correlationId]);
    expect(audit.status).to.equal('ok');
  });

  it('compensation undoes only the prompt’s writes: nodes later cited or user-connected stay, with edges', async () => {
    const tenant = await newTenant(20);
    const first = JSON.stringify({
      nodes: [
        { ref: 'k', type: 'person', name: 'Katherine Johnson', properties: [] },
        { ref: 'n', type: 'organization', name: 'NASA', properties: [] },
        { ref: 'h', type: 'place', name: 'Hampton', properties: [] },
      ],
      edges: [
        { type: 'WORKED_AT', source_ref: 'k', target_ref: 'n', reasoning: 'Stated.', evidence: 'e' },
        { type: 'LIVED_IN', source_ref: 'k', target_ref: 'h', reasoning: 'Stated.', evidence: 'e' },
      ],
    });
    const later = JSON.stringify({
      nodes: [{ ref: 'k', type: 'person', name: 'Katherine Johnson', properties: [] }],
      edges: [],
    });
    let answering = false;
    openai.fake.scriptChat((schema, body) => {
      if (schema === 'refined_graph') {
        return { content: String(body.messages.at(-1).content).includes('Where?') ? first : later };
      }
      if (schema === 'grounded_answer') {
        answering = true;
        return { content: '{}', delayMs: 1200 }; // fails its schema: 502, compensated
      }
      return undefined;
    });
    const pending = client(tenant.api_key).post('/v1/ontology/prompt', {
      prompt: 'Katherine Johnson worked at NASA and lived in Hampton. Where?',
      force_intent: 'both',
    });
    await eventually(() => answering, { what: 'the answer step', intervalMs: 20 });
    // Meanwhile a later prompt refers to Katherine Johnson, and a user connects a node of theirs to
    // NASA: both nodes were created by the first prompt.
    const referring = await client(tenant.api_key).post('/v1/ontology/prompt', {
      prompt: 'Katherine Johnson was a mathematician.',
      force_intent: 'update',
    });
    expect(referring.body).to.include({ nodes_created: 0 });
    const [nasa] = await owner().query(`SELECT id FROM nodes WHERE workspace_id = $1 AND name = 'NASA'`, [
      tenant.workspace_id,
    ]);
    const ames = await client(tenant.api_key).post('/v1/ontology/nodes', { type: 'place', name: 'Ames' });
    const theirs = await client(tenant.api_key).post('/v1/ontology/edges', {
      type: 'PART_OF',
      source_node_id: ames.body.id,
      target_node_id: nasa.id,
    });
    expect(theirs.status).to.be.oneOf([200, 201]);
    expect((await pending).status).to.equal(502);

    // Only the references of others are left: the prompt's own were taken back with its edges.
    const nodes = await owner().query(
      `SELECT name, is_deleted, reference_count FROM nodes WHERE workspace_id = $1 ORDER BY name`,
      [tenant.workspace_id],
    );
    expect(nodes).to.deep.equal([
      { name: 'Ames', is_deleted: false, reference_count: 1 },
      { name: 'Hampton', is_deleted: true, reference_count: 1 },
      { name: 'Katherine Johnson', is_deleted: false, reference_count: 1 },
      { name: 'NASA', is_deleted: false, reference_count: 1 },
    ]);
    const edges = await owner().query(`SELECT type, is_deleted FROM edges WHERE workspace_id = $1 ORDER BY type`, [
      tenant.workspace_id,
    ]);
    expect(edges).to.deep.equal([
      { type: 'LIVED_IN', is_deleted: true },
      { type: 'PART_OF', is_deleted: false },
      { type: 'WORKED_AT', is_deleted: true },
    ]);
    const charges = await owner().query(
      `SELECT amount FROM credit_ledger WHERE workspace_id = $1 AND kind LIKE 'ontology.prompt.%' ORDER BY created_at`,
      [tenant.workspace_id],
    );
    expect(charges.map((row: { amount: number }) => row.amount)).to.deep.equal([-7, -5, 7]);
  });

  it('node.created leaves only when the prompt completes: one undone after persisting pays no embedding', async () => {
    const failed = await newTenant(20);
    scriptAnswer({ status: 500 });
    const response = await client(failed.api_key).post('/v1/ontology/prompt', {
      prompt: 'Katherine Johnson worked at NASA. Where?',
      force_intent: 'both',
    });
    expect(response.status).to.equal(502);

    const done = await newTenant(20);
    openai.fake.scriptChat((schema) => (schema === 'refined_graph' ? { content: REFINED } : undefined));
    const completed = await client(done.api_key).post('/v1/ontology/prompt', {
      prompt: 'Katherine Johnson worked at NASA.',
      force_intent: 'update',
    });
    expect(completed.status).to.equal(200);

    const embedCharges = async (workspaceId: string) =>
      (
        await owner().query(
          `SELECT count(*)::int AS n FROM credit_ledger WHERE workspace_id = $1 AND kind = 'worker.embed_node'
           AND amount < 0`,
          [workspaceId],
        )
      )[0].n;
    // The completed prompt's two nodes are embedded and charged…
    await eventually(async () => (await embedCharges(done.workspace_id)) === 2, { what: 'the embedding charges' });
    // …and by then the outbox has been swept: the undone prompt's nodes never had an event to deliver.
    await openai.stack.runtime.outbox.sweep(0);
    const [events] = await owner().query(
      `SELECT count(*)::int AS n FROM outbox WHERE workspace_id = $1 AND event_type = 'node.created'`,
      [failed.workspace_id],
    );
    expect(events.n).to.equal(0);
    expect(await embedCharges(failed.workspace_id)).to.equal(0);
    expect(await creditBalance(failed.tenant_id)).to.equal(20);
  });

  it('a prompt cancelled mid-answer still compensates: writes undone, refunded, audited, 503', async () => {
    const tenant = await newTenant(20);
    const answering = scriptAnswer({ content: '{}', delayMs: 30_000 });
    const correlationId = randomUUID();
    const pending = client(tenant.api_key).post(
      '/v1/ontology/prompt',
      { prompt: 'Katherine Johnson worked at NASA. Where?', force_intent: 'both' },
      { 'x-correlation-id': correlationId },
    );
    await eventually(answering, { what: 'the answer step', intervalMs: 20 });
    const handle = openai.stack.runtime.temporal.client.workflow.getHandle(`prompt-${correlationId}`);
    await handle.cancel();
    const response = await pending;
    expect(response.status).to.equal(503);
    expect((await handle.describe()).status.name).to.equal('CANCELLED');

    expect(await creditBalance(tenant.tenant_id)).to.equal(20);
    const [live] = await owner().query(
      `SELECT count(*)::int AS n FROM nodes WHERE workspace_id = $1 AND NOT is_deleted`,
      [tenant.workspace_id],
    );
    expect(live.n).to.equal(0);
    const [audit] = await owner().query(
      `SELECT status, error_code, credits_used FROM prompt_runs WHERE correlation_id = $1`,
      [correlationId],
    );
    expect(audit).to.deep.equal({ status: 'error', error_code: 'CancelledFailure', credits_used: 0 });
  });

  it('an orphaned stream is settled by the reconcile pass via its reservation; it cannot answer after', async () => {
    const tenant = await newTenant(20);
    const answering = scriptAnswer({ content: JSON.stringify({ answer: 'late', citations: [] }), delayMs: 800 }, null);
    const correlationId = randomUUID();
    const streamed = fetch(`${openai.stack.baseUrl}/v1/ontology/prompt/stream`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tenant.api_key}`,
        'content-type': 'application/json',
        'x-correlation-id': correlationId,
      },
      body: JSON.stringify({ prompt: 'Who?' }),
    }).then(async (response) => parseSse(await response.text()));
    await eventually(answering, { what: 'the stream’s model call', intervalMs: 20 });

    // The pass settles streams by age alone (a stream has no workflow to ask): with an age of 0
    // it takes this live one for a dead one, as it would a stream whose API process died.
    const { promptReconciler } = openai.stack.runtime.services;
    const [run] = (await promptReconciler.candidates(tenant.workspace_id, 0)).filter(
      (candidate) => candidate.correlation_id === correlationId,
    );
    expect(run).to.deep.include({ streamed: true, prompt_kind: 'stream' });
    expect(await promptReconciler.settle(tenant.workspace_id, run!)).to.equal(true);

    const events = await streamed;
    expect(events.map((event) => event.event)).not.to.include('done');
    expect(events.at(-1)).to.deep.include({ event: 'error' });
    const ledger = await owner().query(
      `SELECT amount, idempotency_key FROM credit_ledger WHERE workspace_id = $1 ORDER BY created_at`,
      [tenant.workspace_id],
    );
    expect(ledger).to.deep.equal([
      { amount: -3, idempotency_key: `stream-${correlationId}:reserve` },
      { amount: 3, idempotency_key: null },
    ]);
    expect(await creditBalance(tenant.tenant_id)).to.equal(20);
  });
});
