import { createHash, randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { expect } from 'chai';
import { workspaceSearchAttributes } from '../src/platform/temporal/search-attributes';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { balanceBesidesEmbeddings, creditBalance, newTenant } from './helpers/tenants';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const owner = () => getStack().ownerDataSource;
const auditOf = async (correlationId: string) =>
  (await owner().query(`SELECT * FROM prompt_runs WHERE correlation_id = $1`, [correlationId])) as [
    Record<string, any>,
  ];

const FACTS = 'Ada Lovelace works at Analytical Engines Ltd. Charles Babbage mentored Ada Lovelace.';

describe('POST /v1/ontology/prompt (local model)', function () {
  this.timeout(30_000);

  it('update: persists nodes and edges, charges 5, sets X-Correlation-Id and writes an ok audit row', async () => {
    const tenant = await newTenant(20);
    const response = await as(tenant.api_key).post('/v1/ontology/prompt', { prompt: FACTS });
    expect(response.status).to.equal(200);
    expect(response.body.intent).to.equal('update');
    expect(response.body.nodes_created).to.equal(3);
    expect(response.body.edges_created).to.equal(2);
    expect(response.body.nodes.map((node: { name: string }) => node.name)).to.have.members([
      'Ada Lovelace',
      'Analytical Engines Ltd',
      'Charles Babbage',
    ]);
    expect(response.body.edges.map((edge: { type: string }) => edge.type)).to.have.members(['WORKS_AT', 'MENTORED']);
    expect(response.body.edges[0].reasoning).to.be.a('string').and.not.empty;
    expect(response.body.edges[0].evidence).to.be.a('string').and.not.empty;
    expect(response.body.answer).to.equal(null);
    expect(response.headers.get('x-correlation-id')).to.equal(response.body.correlation_id);
    expect(response.body.credit_receipt).to.include({ kind: 'ontology.prompt.update', amount: 5 });
    expect(await creditBalance(tenant.tenant_id)).to.equal(15);

    const [audit] = await auditOf(response.body.correlation_id);
    expect(audit).to.include({
      status: 'ok',
      intent: 'update',
      node_count: 3,
      edge_count: 2,
      credits_used: 5,
      prompt_kind: 'markdown_text',
      error_code: null,
      linked_credit_ledger_id: response.body.credit_receipt.ledger_id,
      source_hash: sha256(FACTS),
    });
    expect(audit.summary.length).to.be.at.most(500);
    expect(audit.summary).not.to.contain('Lovelace');
    expect(audit.duration_ms).to.be.a('number').and.at.least(0);
  });

  it('the raw prompt is stored nowhere: not in the audit row, nor in the Temporal history', async () => {
    const tenant = await newTenant(20);
    const secret = `Zebulon Quartermaine works at Xylophone Industries Corp. Marker ${randomUUID()}.`;
    const response = await as(tenant.api_key).post('/v1/ontology/prompt', { prompt: secret });
    const rows = await owner().query(
      `SELECT row_to_json(p)::text AS row FROM prompt_runs p WHERE correlation_id = $1`,
      [response.body.correlation_id],
    );
    expect(rows[0].row).not.to.contain('Marker');
    const history = await getStack()
      .runtime.temporal.client.workflow.getHandle(`prompt-${response.body.correlation_id}`)
      .fetchHistory();
    // The history holds ciphertext (the payload codec); decrypted, the input holds the sealed prompt.
    const input = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
    const decoded = JSON.stringify(
      (await getStack().runtime.temporal.codec.decode(input as Payload[])).map((p) =>
        Buffer.from(p.data!).toString('utf8'),
      ),
    );
    expect(decoded).to.contain('sealed');
    expect(decoded).not.to.contain('Marker');
  });

  it('the same facts again are references, not duplicates', async () => {
    const tenant = await newTenant(20);
    const first = await as(tenant.api_key).post('/v1/ontology/prompt', { prompt: FACTS });
    const ada = first.body.nodes.find((node: { name: string }) => node.name === 'Ada Lovelace');
    const before = (await owner().query(`SELECT reference_count FROM nodes WHERE id = $1`, [ada.id]))[0]
      .reference_count;
    const again = await as(tenant.api_key).post('/v1/ontology/prompt', {
      prompt: 'Ada  Lovelace works at Analytical Engines Ltd.',
    });
    expect(again.status).to.equal(200);
    expect(again.body.nodes_created).to.equal(0);
    expect(again.body.edges_created).to.equal(0);
    expect(again.body.nodes.map((node: { id: string }) => node.id)).to.include(ada.id);
    const [{ nodes, edges }] = await owner().query(
      `SELECT (SELECT count(*)::int FROM nodes WHERE workspace_id = $1 AND NOT is_deleted) AS nodes,
              (SELECT count(*)::int FROM edges WHERE workspace_id = $1 AND NOT is_deleted) AS edges`,
      [tenant.workspace_id],
    );
    expect({ nodes, edges }).to.deep.equal({ nodes: 3, edges: 2 });
    const after = (await owner().query(`SELECT reference_count FROM nodes WHERE id = $1`, [ada.id]))[0].reference_count;
    expect(after).to.be.greaterThan(before);
  });

  it('query: answers citing only this workspace’s graph, charges 3, counts cited nodes as referenced', async () => {
    const tenant = await newTenant(30);
    const seeded = await as(tenant.api_key).post('/v1/ontology/prompt', { prompt: FACTS });
    const babbage = seeded.body.nodes.find((node: { name: string }) => node.name === 'Charles Babbage');
    const before = (await owner().query(`SELECT reference_count FROM nodes WHERE id = $1`, [babbage.id]))[0]
      .reference_count;
    const response = await as(tenant.api_key).post('/v1/ontology/prompt', { prompt: 'Who is Charles Babbage?' });
    expect(response.status).to.equal(200);
    expect(response.body.intent).to.equal('query');
    expect(response.body.nodes_created).to.equal(0);
    expect(response.body.answer).to.contain('Charles Babbage');
    expect(response.body.citations).to.include(babbage.id);
    expect(response.body.credit_receipt).to.include({ kind: 'ontology.prompt.query', amount: 3 });
    const after = (await owner().query(`SELECT reference_count FROM nodes WHERE id = $1`, [babbage.id]))[0]
      .reference_count;
    expect(after).to.equal(before + 1);
    expect(await balanceBesidesEmbeddings(tenant.tenant_id)).to.equal(30 - 5 - 3);

    const stranger = await newTenant(10);
    const elsewhere = await as(stranger.api_key).post('/v1/ontology/prompt', { prompt: 'Who is Charles Babbage?' });
    expect(elsewhere.status).to.equal(200);
    expect(elsewhere.body.citations).to.deep.equal([]);
  });

  it('a question is answered with the facts the graph holds, citing the nodes it states (local model)', async () => {
    const tenant = await newTenant(20);
    const client = as(tenant.api_key);
    const stored = await client.post('/v1/ontology/prompt', {
      prompt: 'Ada Lovelace works at Analytical Engines Ltd.',
    });
    const idOf = (name: string) => stored.body.nodes.find((node: { name: string }) => node.name === name).id;
    const question = 'Who is Ada Lovelace?';
    const answered = await client.post('/v1/ontology/prompt', { prompt: question });
    expect(answered.status).to.equal(200);
    expect(answered.body.answer).to.equal(
      'From the graph: Ada Lovelace (person). Ada Lovelace works at Analytical Engines Ltd.',
    );
    expect(answered.body.citations).to.have.members([idOf('Ada Lovelace'), idOf('Analytical Engines Ltd')]);
    // ontology.ask answers the same, through the same retrieval and model.
    const asked = await client.post('/v1/cap/ontology.ask', { question });
    expect(asked.body.result.answer).to.equal(answered.body.answer);
    expect(asked.body.result.citations).to.have.members(answered.body.citations);
  });

  it('both: updates first, then answers from the updated graph; charges 7', async () => {
    const tenant = await newTenant(10);
    const response = await as(tenant.api_key).post('/v1/ontology/prompt', {
      prompt: 'Grace Hopper works at Remington Rand. Who is Grace Hopper?',
    });
    expect(response.status).to.equal(200);
    expect(response.body.intent).to.equal('both');
    expect(response.body.nodes_created).to.equal(2);
    const grace = response.body.nodes.find((node: { name: string }) => node.name === 'Grace Hopper');
    expect(response.body.citations).to.include(grace.id);
    expect(response.body.credit_receipt).to.include({ kind: 'ontology.prompt.both', amount: 7 });
    expect(await balanceBesidesEmbeddings(tenant.tenant_id)).to.equal(3);
  });

  it('force_intent skips classification', async () => {
    const tenant = await newTenant(10);
    const response = await as(tenant.api_key).post('/v1/ontology/prompt', {
      prompt: 'Who is Grace Hopper?',
      force_intent: 'update',
    });
    expect(response.body.intent).to.equal('update');
    expect(response.body.credit_receipt.kind).to.equal('ontology.prompt.update');
  });

  it('402 before anything runs when credits are short; nothing written; the refusal is audited', async () => {
    const tenant = await newTenant(2);
    const response = await as(tenant.api_key).post('/v1/ontology/prompt', { prompt: FACTS });
    expect(response.status).to.equal(402);
    expect(response.body).to.deep.equal({
      detail: { error: 'insufficient_credits', required: 3, available: 2, kind: 'ontology.prompt.query' },
    });
    const [{ count }] = await owner().query(`SELECT count(*)::int AS count FROM nodes WHERE workspace_id = $1`, [
      tenant.workspace_id,
    ]);
    expect(count).to.equal(0);
    const [audit] = await auditOf(response.headers.get('x-correlation-id')!);
    expect(audit).to.include({
      status: 'error',
      error_code: 'InsufficientCreditsError',
      credits_used: 0,
      node_count: 0,
    });

    // Enough for a query, not for the update this prompt turns out to be: refused by the reservation.
    const four = await newTenant(4);
    const refused = await as(four.api_key).post('/v1/ontology/prompt', { prompt: FACTS });
    expect(refused.status).to.equal(402);
    expect(refused.body.detail).to.include({ required: 5, available: 4, kind: 'ontology.prompt.update' });
    expect(await creditBalance(four.tenant_id)).to.equal(4);
    const [{ nodes }] = await owner().query(`SELECT count(*)::int AS nodes FROM nodes WHERE workspace_id = $1`, [
      four.workspace_id,
    ]);
    expect(nodes).to.equal(0);
  });

  it('a repeated X-Correlation-Id returns the first result and charges once', async () => {
    const tenant = await newTenant(20);
    const correlationId = randomUUID();
    const headers = { 'x-correlation-id': correlationId };
    const first = await as(tenant.api_key).post('/v1/ontology/prompt', { prompt: FACTS }, headers);
    const second = await as(tenant.api_key).post('/v1/ontology/prompt', { prompt: FACTS }, headers);
    expect(first.body.correlation_id).to.equal(correlationId);
    expect(second.body).to.deep.equal(first.body);
    expect(await creditBalance(tenant.tenant_id)).to.equal(15);
    expect(await auditOf(correlationId)).to.have.length(1);

    const other = await newTenant(20);
    const stolen = await as(other.api_key).post('/v1/ontology/prompt', { prompt: FACTS }, headers);
    expect(stolen.status).to.equal(409);
  });

  it('one correlation id, one request: after Temporal forgets it, another is 409, the same one replays', async () => {
    const tenant = await newTenant(30);
    const first = await as(tenant.api_key).post('/v1/ontology/prompt', { prompt: FACTS });
    expect(first.status).to.equal(200);
    expect(await creditBalance(tenant.tenant_id)).to.equal(25);

    // Retention, simulated: the run's rows move to a correlation id that no execution on this
    // server ever had, which is what they look like once retention has deleted the execution
    // (the dev server takes about 30 s to delete one).
    const correlationId = randomUUID();
    await owner().transaction(async (m) => {
      const moves: [string, string][] = [
        ['prompt_runs', 'correlation_id'],
        ['prompt_writes', 'correlation_id'],
      ];
      for (const [table, column] of moves) {
        await m.query(`UPDATE ${table} SET ${column} = $2 WHERE ${column} = $1`, [
          first.body.correlation_id,
          correlationId,
        ]);
      }
      await m.query(`UPDATE credit_ledger SET idempotency_key = $2 WHERE idempotency_key = $1`, [
        `prompt-${first.body.correlation_id}:reserve`,
        `prompt-${correlationId}:reserve`,
      ]);
    });
    const headers = { 'x-correlation-id': correlationId };

    const other = await as(tenant.api_key).post(
      '/v1/ontology/prompt',
      { prompt: 'Grace Hopper works at Remington Rand.' },
      headers,
    );
    expect(other.status).to.equal(409);
    const forced = await as(tenant.api_key).post(
      '/v1/ontology/prompt',
      { prompt: FACTS, force_intent: 'both' },
      headers,
    );
    expect(forced.status).to.equal(409);

    const again = await as(tenant.api_key).post('/v1/ontology/prompt', { prompt: FACTS }, headers);
    expect(again.status).to.equal(200);
    expect(again.body).to.deep.include({
      correlation_id: correlationId,
      intent: 'update',
      nodes_created: 3,
      edges_created: 2,
      answer: null,
      citations: [],
      credit_receipt: first.body.credit_receipt,
    });
    const ids = (body: { nodes: { id: string }[]; edges: { id: string }[] }) => [
      ...body.nodes.map((node) => node.id),
      ...body.edges.map((edge) => edge.id),
    ];
    expect(ids(again.body)).to.deep.equal(ids(first.body));
    // Nothing ran again: no execution, no charge, one audit row.
    const describe = getStack().runtime.temporal.client.workflow.getHandle(`prompt-${correlationId}`).describe();
    expect(
      await describe.then(
        () => 'found',
        (error) => error instanceof WorkflowNotFoundError,
      ),
    ).to.equal(true);
    expect(await creditBalance(tenant.tenant_id)).to.equal(25);
    expect(await auditOf(correlationId)).to.have.length(1);
  });

  it('the workspace’s own tenant pays: a tenant id slipped into a workflow start charges no one else', async () => {
    const tenant = await newTenant(20);
    const victim = await newTenant(20);
    const correlationId = randomUUID();
    const { runtime, config } = getStack();
    // A start that bypasses the API, with a tenant of its choosing (and a prompt nobody sealed).
    const handle = await runtime.temporal.client.workflow.start('promptWorkflow', {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowId: `prompt-${correlationId}`,
      typedSearchAttributes: workspaceSearchAttributes(tenant.workspace_id),
      args: [
        {
          workspaceId: tenant.workspace_id,
          tenantId: victim.tenant_id,
          correlationId,
          prompt: { sealed: 'not sealed by the API' },
          sourceHash: sha256(''),
          requestHash: sha256(''),
          promptKind: 'markdown_text',
          forceIntent: 'update',
          startedAtMs: Date.now(),
        },
      ],
    });
    await handle.result().then(
      () => expect.fail('a prompt nobody sealed cannot be refined'),
      () => undefined,
    );
    const charges = await owner().query(
      `SELECT tenant_id, amount FROM credit_ledger WHERE idempotency_key = $1 OR linked_event_id IN
         (SELECT id FROM credit_ledger WHERE idempotency_key = $1) ORDER BY amount`,
      [`prompt-${correlationId}:reserve`],
    );
    expect(charges).to.deep.equal([
      { tenant_id: tenant.tenant_id, amount: -5 },
      { tenant_id: tenant.tenant_id, amount: 5 },
    ]);
    expect(await creditBalance(victim.tenant_id)).to.equal(20);
    expect(await creditBalance(tenant.tenant_id)).to.equal(20);
  });

  it('an X-Correlation-Id the response schema refuses is replaced by a fresh one before anything runs', async () => {
    const tenant = await newTenant(20);
    // uuid-shaped, but version 0: PromptResponse's z.uuid() refuses it.
    const bogus = '00000000-0000-0000-0000-000000000001';
    const response = await as(tenant.api_key).post(
      '/v1/ontology/prompt',
      { prompt: FACTS },
      { 'x-correlation-id': bogus },
    );
    expect(response.status).to.equal(200);
    expect(response.body.correlation_id).not.to.equal(bogus);
    expect(response.headers.get('x-correlation-id')).to.equal(response.body.correlation_id);
    expect(await creditBalance(tenant.tenant_id)).to.equal(15);
    const audits = await owner().query(`SELECT correlation_id FROM prompt_runs WHERE workspace_id = $1`, [
      tenant.workspace_id,
    ]);
    expect(audits).to.deep.equal([{ correlation_id: response.body.correlation_id }]);
  });

  it('a 20,000-character prompt naming 1,000 things persists a bounded graph, no name longer than a name', async () => {
    const tenant = await newTenant(20);
    let prompt = `${'Zzzz'.repeat(1000)}. `;
    for (let i = 0; prompt.length < 19_900; i += 1) prompt += `Person${i} Smith joined Company${i} Ltd. `;
    const response = await as(tenant.api_key).post('/v1/ontology/prompt', { prompt, force_intent: 'update' });
    expect(response.status).to.equal(200);
    expect(response.body.nodes_created).to.equal(200);
    expect(response.body.edges_created).to.be.at.most(500);
    const [{ longest, nodes }] = await owner().query(
      `SELECT max(length(name))::int AS longest, count(*)::int AS nodes FROM nodes WHERE workspace_id = $1`,
      [tenant.workspace_id],
    );
    expect({ nodes, short: longest <= 120 }).to.deep.equal({ nodes: 200, short: true });
  });

  it('is findable in Temporal by workspace and correlation id', async () => {
    const tenant = await newTenant(10);
    const response = await as(tenant.api_key).post('/v1/ontology/prompt', { prompt: 'Who is anyone?' });
    const { client } = getStack().runtime.temporal;
    const description = await client.workflow.getHandle(`prompt-${response.body.correlation_id}`).describe();
    expect(description.type).to.equal('promptWorkflow');
    expect(description.status.name).to.equal('COMPLETED');
    expect(description.searchAttributes.WeftWorkspaceId).to.deep.equal([tenant.workspace_id]);
  });

  it('422 for bad bodies, 403 without the prompt:write scope, 401 without a credential', async () => {
    const tenant = await newTenant(10);
    for (const body of [
      {},
      { prompt: '' },
      { prompt: '   ' },
      { prompt: 'x', force_intent: 'delete' },
      { prompt: 'x'.repeat(20_001) },
    ]) {
      expect(
        (await as(tenant.api_key).post('/v1/ontology/prompt', body)).status,
        JSON.stringify(body).slice(0, 40),
      ).to.equal(422);
    }
    const narrow = await as(tenant.user_jwt).post('/v1/auth/me/api-keys', {
      name: 'reader',
      scopes: ['ontology:read'],
    });
    expect((await as(narrow.body.token).post('/v1/ontology/prompt', { prompt: FACTS })).status).to.equal(403);
    expect((await as('').post('/v1/ontology/prompt', { prompt: FACTS })).status).to.equal(401);
  });
});
