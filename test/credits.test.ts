import { expect } from 'chai';
import { InsufficientCreditsError } from '../src/credits/errors';
import type { CreditReceipt } from '../src/credits/repository';
import { readCreditBalance, refundCredits, reserveCredits } from '../src/credits/repository';
import { CREDIT_COSTS, CREDIT_GRANT_KIND } from '../src/rules/costs';
import type { BootstrapResult } from '../src/tenancy/service';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

// The ledger is exercised as services use it: inside the app role's unit of work, under RLS.
const inWorkspace = <T>(t: BootstrapResult, work: Parameters<ReturnType<typeof getStack>['runtime']['uow']>[1]) =>
  getStack().runtime.uow({ workspaceId: t.workspace_id }, work) as Promise<T>;

const reserve = (
  t: BootstrapResult,
  kind: keyof typeof CREDIT_COSTS,
  extra: { quantity?: number; idempotencyKey?: string } = {},
) =>
  inWorkspace<CreditReceipt>(t, (m) =>
    reserveCredits(m, { tenantId: t.tenant_id, workspaceId: t.workspace_id, kind, ...extra }),
  );

const balanceOf = async (t: BootstrapResult) =>
  (await inWorkspace<{ balance: number }>(t, (m) => readCreditBalance(m, t.tenant_id))).balance;

const ledgerRows = async (t: BootstrapResult) =>
  getStack().ownerDataSource.query(
    `SELECT id, workspace_id, kind, amount, linked_event_id FROM credit_ledger WHERE tenant_id = $1
     ORDER BY created_at, amount`,
    [t.tenant_id],
  );

describe('credit ledger', () => {
  it('holds every kind and cost of contract section 8', () => {
    expect(CREDIT_COSTS).to.include({
      'ontology.prompt.update': 5,
      'ontology.prompt.query': 3,
      'ontology.prompt.both': 7,
      'ontology.search.hybrid': 1,
      'ontology.search.vector': 1,
      'worker.embed_node': 1,
      'worker.recompute_type': 0,
      'worker.person_resolve': 0,
    });
  });

  it('records an operator grant as a tenant-level credits.grant row', async () => {
    const t = await newTenant(12);
    const rows = await ledgerRows(t);
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ kind: CREDIT_GRANT_KIND, amount: 12, workspace_id: null });
    expect(await balanceOf(t)).to.equal(12);
  });

  it('reserves with a negative row and a receipt {ledger_id, kind, amount}', async () => {
    const t = await newTenant(10);
    const receipt = await reserve(t, 'ontology.prompt.both');
    expect(receipt).to.have.all.keys('ledger_id', 'kind', 'amount');
    expect(receipt).to.include({ kind: 'ontology.prompt.both', amount: 7 });
    expect(await balanceOf(t)).to.equal(3);
    const row = (await ledgerRows(t)).find((r: { id: string }) => r.id === receipt.ledger_id);
    expect(row).to.include({ kind: 'ontology.prompt.both', amount: -7, workspace_id: t.workspace_id });
  });

  it('charges quantity × cost', async () => {
    const t = await newTenant(10);
    const receipt = await reserve(t, 'worker.embed_node', { quantity: 4 });
    expect(receipt.amount).to.equal(4);
    expect(await balanceOf(t)).to.equal(6);
  });

  it('refuses a short balance with the 402 body of the contract and writes nothing', async () => {
    const t = await newTenant(4);
    const error = await reserve(t, 'ontology.prompt.update').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(InsufficientCreditsError);
    const http = error as InsufficientCreditsError;
    expect(http.code).to.equal('insufficient_credits');
    expect(http.detail).to.deep.equal({
      error: 'insufficient_credits',
      required: 5,
      available: 4,
      kind: 'ontology.prompt.update',
    });
    expect(await balanceOf(t)).to.equal(4);
    expect(await ledgerRows(t)).to.have.length(1);
  });

  it('refuses a locked account with 402 whatever the balance', async () => {
    const t = await newTenant(100);
    await getStack().ownerDataSource.query(`UPDATE tenants SET locked = true WHERE id = $1`, [t.tenant_id]);
    const error = (await reserve(t, 'ontology.search.hybrid').catch((e: unknown) => e)) as InsufficientCreditsError;
    expect(error.code).to.equal('insufficient_credits');
    expect(error.detail).to.include({
      error: 'insufficient_credits',
      required: 1,
      available: 0,
      kind: 'ontology.search.hybrid',
    });
    expect(await balanceOf(t)).to.equal(100);
  });

  it('never overdraws: 50 concurrent reservations against a balance of 10', async () => {
    const t = await newTenant(10);
    const outcomes = await Promise.allSettled(Array.from({ length: 50 }, () => reserve(t, 'ontology.search.vector')));
    const ok = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.filter((o) => o.status === 'rejected') as PromiseRejectedResult[];
    expect(ok).to.have.length(10);
    expect(refused).to.have.length(40);
    for (const r of refused) expect((r.reason as InsufficientCreditsError).code).to.equal('insufficient_credits');
    expect(await balanceOf(t)).to.equal(0);
    const charges = (await ledgerRows(t)).filter((r: { amount: number }) => r.amount < 0);
    expect(charges).to.have.length(10);
  });

  it('is idempotent on the idempotency key, also under concurrency', async () => {
    const t = await newTenant(10);
    const first = await reserve(t, 'worker.embed_node', { idempotencyKey: 'embed-x:node-1' });
    const again = await reserve(t, 'worker.embed_node', { idempotencyKey: 'embed-x:node-1' });
    expect(again).to.deep.equal(first);
    const racing = await Promise.all(
      Array.from({ length: 8 }, () => reserve(t, 'worker.embed_node', { idempotencyKey: 'embed-x:node-2' })),
    );
    expect(new Set(racing.map((r) => r.ledger_id)).size).to.equal(1);
    expect(await balanceOf(t)).to.equal(8);
  });

  it('refunds with a positive linked row of the same kind, once', async () => {
    const t = await newTenant(10);
    const receipt = await reserve(t, 'ontology.prompt.query');
    expect(await balanceOf(t)).to.equal(7);
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        inWorkspace<{ refunded: boolean }>(t, (m) => refundCredits(m, { ledgerId: receipt.ledger_id })),
      ),
    );
    expect(results.filter((r) => r.refunded)).to.have.length(1);
    expect(await balanceOf(t)).to.equal(10);
    const refunds = (await ledgerRows(t)).filter(
      (r: { linked_event_id: string | null }) => r.linked_event_id === receipt.ledger_id,
    );
    expect(refunds).to.have.length(1);
    expect(refunds[0]).to.include({ kind: 'ontology.prompt.query', amount: 3, workspace_id: t.workspace_id });
  });

  it('records free kinds without refusing them at a zero balance', async () => {
    const t = await newTenant(0);
    const receipt = await reserve(t, 'worker.person_resolve');
    expect(receipt.amount).to.equal(0);
    expect(await balanceOf(t)).to.equal(0);
  });

  it('keeps reservations inside their workspace: another workspace cannot refund them', async () => {
    const a = await newTenant(5);
    const b = await newTenant(5);
    const receipt = await reserve(a, 'ontology.search.hybrid');
    const error = (await inWorkspace(b, (m) => refundCredits(m, { ledgerId: receipt.ledger_id })).catch(
      (e: unknown) => e,
    )) as { code: string };
    expect(error.code).to.equal('not_found');
    expect(await balanceOf(a)).to.equal(4);
  });
});

describe('chargeFor: charge, run, settle', () => {
  const credits = () => getStack().runtime.services.credits;
  const payer = (t: BootstrapResult) => ({ tenantId: t.tenant_id, workspaceId: t.workspace_id });
  const settlementOf = async (ledgerId: string) =>
    (await getStack().ownerDataSource.query(`SELECT settlement FROM credit_ledger WHERE id = $1`, [ledgerId]))[0]
      .settlement;

  it('confirms the charge when the work succeeds: it can no longer be refunded', async () => {
    const t = await newTenant(5);
    const receipt = await credits().chargeFor(payer(t), 'ontology.search.vector', async (charge) => charge.receipt);
    expect(receipt).to.include({ kind: 'ontology.search.vector', amount: 1 });
    expect(await settlementOf(receipt.ledger_id)).to.equal('confirmed');
    const refund = await inWorkspace<{ refunded: boolean }>(t, (m) =>
      refundCredits(m, { ledgerId: receipt.ledger_id }),
    );
    expect(refund.refunded).to.equal(false);
    expect(await balanceOf(t)).to.equal(4);
  });

  it('refunds the charge and rethrows the original error when the work fails', async () => {
    const t = await newTenant(5);
    let ledgerId = '';
    const failure = new Error('the work failed');
    const error = await credits()
      .chargeFor(payer(t), 'ontology.search.hybrid', async (charge) => {
        ledgerId = charge.receipt.ledger_id;
        expect(await balanceOf(t)).to.equal(4);
        throw failure;
      })
      .catch((e: unknown) => e);
    expect(error).to.equal(failure);
    expect(await balanceOf(t)).to.equal(5);
    expect(await settlementOf(ledgerId)).to.equal('refunded');
  });

  it('refuses with 402 before the work runs', async () => {
    const t = await newTenant(0);
    let ran = false;
    const error = await credits()
      .chargeFor(payer(t), 'ontology.search.hybrid', async () => {
        ran = true;
      })
      .catch((e: unknown) => e);
    expect(error).to.be.instanceOf(InsufficientCreditsError);
    expect(ran).to.equal(false);
  });

  it('keys each reservation, so the reconcile pass can find and settle it', async () => {
    const t = await newTenant(5);
    const receipt = await credits().chargeFor(payer(t), 'ontology.search.vector', async (charge) => charge.receipt, {
      idempotencyKey: 'search-request-1',
    });
    const [row] = await getStack().ownerDataSource.query(`SELECT idempotency_key FROM credit_ledger WHERE id = $1`, [
      receipt.ledger_id,
    ]);
    expect(row.idempotency_key).to.equal('search-request-1');
  });

  it('keys a reservation exactly, whatever characters the key has', async () => {
    const t = await newTenant(5);
    const key = `it's a "key" \\ with $1 and {braces}`;
    const receipt = await credits().chargeFor(payer(t), 'ontology.search.vector', async (charge) => charge.receipt, {
      idempotencyKey: key,
    });
    const [row] = await getStack().ownerDataSource.query(`SELECT idempotency_key FROM credit_ledger WHERE id = $1`, [
      receipt.ledger_id,
    ]);
    expect(row.idempotency_key).to.equal(key);
    expect(await settlementOf(receipt.ledger_id)).to.equal('confirmed');
  });

  it('never overdraws: 20 concurrent charges against a balance of 5', async () => {
    const t = await newTenant(5);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, () => credits().chargeFor(payer(t), 'ontology.search.hybrid', async () => 'done')),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled')).to.have.length(5);
    for (const o of outcomes.filter((x) => x.status === 'rejected') as PromiseRejectedResult[]) {
      expect(o.reason).to.be.instanceOf(InsufficientCreditsError);
    }
    expect(await balanceOf(t)).to.equal(0);
    expect((await ledgerRows(t)).filter((r: { amount: number }) => r.amount < 0)).to.have.length(5);
  });

  it('rolls back what prepare wrote when the charge is refused, and reports the balance', async () => {
    const t = await newTenant(0);
    const setting = async () =>
      (
        await getStack().ownerDataSource.query(`SELECT search FROM workspace_settings WHERE workspace_id = $1`, [
          t.workspace_id,
        ])
      )[0]?.search;
    const error = (await credits()
      .chargeFor(payer(t), 'ontology.search.hybrid', async () => 'ran', {
        prepare: (m) =>
          m.query(
            `INSERT INTO workspace_settings (workspace_id, search) VALUES ($1, '{"default_top_k": 7}')
             ON CONFLICT (workspace_id) DO UPDATE SET search = excluded.search`,
            [t.workspace_id],
          ),
      })
      .catch((e: unknown) => e)) as InsufficientCreditsError;
    expect(error).to.be.instanceOf(InsufficientCreditsError);
    expect(error.detail).to.deep.equal({
      error: 'insufficient_credits',
      required: 1,
      available: 0,
      kind: 'ontology.search.hybrid',
    });
    expect(await setting()).to.equal(undefined);
    expect((await ledgerRows(t)).filter((r: { amount: number }) => r.amount < 0)).to.have.length(0);
  });

  it('commits the last transaction of the work with its confirmation', async () => {
    const t = await newTenant(5);
    const receipt = await credits().chargeFor(payer(t), 'ontology.search.vector', (charge) =>
      getStack().runtime.uow({ workspaceId: t.workspace_id }, async (m) => {
        await m.query(`INSERT INTO workspace_settings (workspace_id, search) VALUES ($1, '{}')`, [t.workspace_id]);
        await charge.confirm(m);
        return charge.receipt;
      }),
    );
    expect(await settlementOf(receipt.ledger_id)).to.equal('confirmed');
    const [row] = await getStack().ownerDataSource.query(`SELECT 1 FROM workspace_settings WHERE workspace_id = $1`, [
      t.workspace_id,
    ]);
    expect(row).to.not.equal(undefined);
    expect(await balanceOf(t)).to.equal(4);
  });
});
