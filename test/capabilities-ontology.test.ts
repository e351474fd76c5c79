import { createHash, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { capClient } from './helpers/cap';
import { createNode } from './helpers/graph';
import { as } from './helpers/http';
import { useOpenAIStack } from './helpers/openai-stack';
import { getStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';

const owner = () => getStack().ownerDataSource;

const ledgerOf = (workspaceId: string, kind: string): Promise<{ amount: number; linked_event_id: string | null }[]> =>
  owner().query(
    `SELECT amount, linked_event_id FROM credit_ledger
     WHERE workspace_id = $1 AND kind = $2 ORDER BY created_at, amount`,
    [workspaceId, kind],
  );

const auditOf = async (correlationId: string) =>
  (await owner().query(`SELECT * FROM prompt_runs WHERE correlation_id = $1`, [correlationId]))[0];

describe('capabilities: ontology.search, ontology.ask and their credits', () => {
  describe('ontology.search', () => {
    it('answers {results:[{node, score}]} from the same search as POST /v1/ontology/search, for 1 credit', async () => {
      const tenant = await newTenant(20);
      for (const name of ['Ada Lovelace', 'Ada Byron', 'Charles Babbage'])
        await createNode(tenant.api_key, 'person', name);
      const cap = capClient(tenant.api_key);
      const found = await cap('ontology.search', { query: 'Ada', top_k: 2 });
      expect(found.status).to.equal(200);
      expect(found.body.credits_charged).to.equal(1);
      expect(found.body.result.results).to.have.length(2);
      for (const row of found.body.result.results) {
        expect(row).to.have.keys(['node', 'score']);
        expect(row.node).to.include.keys(['id', 'type', 'name', 'importance_score']);
      }
      const direct = await as(tenant.api_key).post('/v1/ontology/search', { q: 'Ada', top_k: 2, mode: 'hybrid' });
      expect(found.body.result.results.map((r: any) => r.node.id)).to.deep.equal(
        direct.body.results.map((r: any) => r.node.id),
      );
      const charges = await ledgerOf(tenant.workspace_id, 'ontology.search.hybrid');
      expect(charges.map((row) => row.amount)).to.deep.equal([-1, -1]);
    });

    it('takes top_k from the workspace settings when omitted, and refuses one above 100', async () => {
      const tenant = await newTenant(20);
      for (const name of ['n1', 'n2', 'n3', 'n4']) await createNode(tenant.api_key, 'thing', name);
      await as(tenant.api_key).patch('/v1/ontology/config', { search: { default_top_k: 3 } });
      const cap = capClient(tenant.api_key);
      expect((await cap('ontology.search', { query: 'n' })).body.result.results).to.have.length(3);
      const refused = await cap('ontology.search', { query: 'n', top_k: 101 });
      expect(refused.status).to.equal(422);
      expect(refused.body.detail[0].loc).to.deep.equal(['body', 'top_k']);
    });

    it('refuses a short balance with 402 {detail:{error, kind, required, available}} before any work', async () => {
      const tenant = await newTenant(0);
      const refused = await capClient(tenant.api_key)('ontology.search', { query: 'anything' });
      expect(refused.status).to.equal(402);
      expect(refused.body).to.deep.equal({
        detail: { error: 'insufficient_credits', kind: 'ontology.search.hybrid', required: 1, available: 0 },
      });
      expect(await ledgerOf(tenant.workspace_id, 'ontology.search.hybrid')).to.deep.equal([]);
    });
  });

  describe('ontology.ask', () => {
    it('answers from hybrid retrieval with citations, for 3 credits, audited like a query prompt', async () => {
      const tenant = await newTenant(20);
      const ada = await createNode(tenant.api_key, 'person', 'Ada Lovelace');
      const question = 'Who is Ada Lovelace?';
      const asked = await capClient(tenant.api_key)('ontology.ask', { question });
      expect(asked.status).to.equal(200);
      expect(asked.body.credits_charged).to.equal(3);
      expect(asked.body.result.answer).to.be.a('string').and.not.equal('');
      expect(asked.body.result.citations).to.include(ada);

      const correlationId = asked.headers.get('x-correlation-id')!;
      expect(asked.body.result.correlation_id).to.equal(correlationId);
      const audit = await auditOf(correlationId);
      expect(audit).to.include({
        workspace_id: tenant.workspace_id,
        intent: 'query',
        status: 'ok',
        credits_used: 3,
        prompt_kind: 'ontology_ask',
        source_hash: createHash('sha256').update(question).digest('hex'),
      });
      expect(audit.linked_credit_ledger_id).to.be.a('string');
      expect(audit.summary).not.to.contain('Who is');
      const charges = await ledgerOf(tenant.workspace_id, 'ontology.prompt.query');
      expect(charges.map((row) => row.amount)).to.deep.equal([-3]);
      // Charged through chargeFor: pending while the question runs, confirmed once it is answered.
      const [settled] = await owner().query(`SELECT settlement FROM credit_ledger WHERE id = $1`, [
        audit.linked_credit_ledger_id,
      ]);
      expect(settled.settlement).to.equal('confirmed');
    });

    it('refuses an X-Correlation-Id already naming a run: 409, nothing charged, its audit kept', async () => {
      const tenant = await newTenant(20);
      const correlationId = randomUUID();
      const headers = { 'X-Correlation-Id': correlationId };
      const first = await as(tenant.api_key).post('/v1/cap/ontology.ask', { question: 'Who is Ada?' }, headers);
      expect(first.status).to.equal(200);
      const again = await as(tenant.api_key).post('/v1/cap/ontology.ask', { question: 'Who is Ada?' }, headers);
      expect(again.status).to.equal(409);
      expect(await creditBalance(tenant.tenant_id)).to.equal(17);
      expect(await ledgerOf(tenant.workspace_id, 'ontology.prompt.query')).to.have.length(3); // -3, then -3 and +3
      expect(await auditOf(correlationId)).to.include({ status: 'ok', credits_used: 3 });
    });

    it('refuses a short balance with 402 naming kind, required and available, and audits the refusal', async () => {
      const tenant = await newTenant(2);
      const refused = await capClient(tenant.api_key)('ontology.ask', { question: 'Who?' });
      expect(refused.status).to.equal(402);
      expect(refused.body).to.deep.equal({
        detail: { error: 'insufficient_credits', kind: 'ontology.prompt.query', required: 3, available: 2 },
      });
      expect(await creditBalance(tenant.tenant_id)).to.equal(2);
      const audit = await auditOf(refused.headers.get('x-correlation-id')!);
      expect(audit).to.include({ status: 'error', credits_used: 0, error_code: 'InsufficientCreditsError' });
      expect(audit.linked_credit_ledger_id).to.equal(null);
    });
  });

  describe('a failure after the charge (the model provider is down)', function () {
    this.timeout(60_000);
    const openai = useOpenAIStack();

    it('refunds ontology.ask and ontology.search: the balance is whole, the audit says 0 credits', async () => {
      const tenant = await newTenant(10);
      openai.fake.behave({ kind: 'status', status: 500 });
      const cap = capClient(tenant.api_key, openai.stack.baseUrl);

      const asked = await cap('ontology.ask', { question: 'Who is Ada?' });
      expect(asked.status).to.equal(502);
      const searched = await cap('ontology.search', { query: 'Ada' });
      expect(searched.status).to.equal(502);
      openai.fake.behave({ kind: 'ok' });

      expect(await creditBalance(tenant.tenant_id)).to.equal(10);
      for (const [kind, cost] of [
        ['ontology.prompt.query', 3],
        ['ontology.search.hybrid', 1],
      ] as const) {
        const rows = await ledgerOf(tenant.workspace_id, kind);
        expect(rows.map((row) => row.amount)).to.deep.equal([-cost, cost]);
        expect(rows[1]!.linked_event_id).to.be.a('string');
      }
      const audit = await auditOf(asked.headers.get('x-correlation-id')!);
      expect(audit).to.include({ status: 'error', credits_used: 0, error_code: 'UpstreamError' });
    });
  });
});
