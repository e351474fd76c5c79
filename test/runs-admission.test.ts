import { expect } from 'chai';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { scheduleGone } from './helpers/run-schedules';
import { succeeded } from './helpers/runs';
import { getStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';
import { deliver, newTrigger } from './helpers/webhooks';

// Issue 43 item 4: credits at admission. A playbook the balance cannot pay is refused at dispatch, not
// halfway through; `?dry_run=true` answers the estimate and dispatches nothing.
const search = (query: string) => ({ tool: 'ontology.search', input: { query } });
const playbook = (steps: unknown[]) => ({ agent: 'playbook', input: { steps } });
const runsOf = async (workspaceId: string) =>
  Number(
    (
      await getStack().ownerDataSource.query(`SELECT count(*) AS n FROM run_executions WHERE workspace_id = $1`, [
        workspaceId,
      ])
    )[0].n,
  );

describe('runs: credits at admission (issue 43 item 4)', () => {
  it('refuses a playbook its balance cannot pay with 402 and the estimate; nothing is written or charged', async () => {
    const tenant = await newTenant(1);
    const client = as(tenant.api_key);
    const body = playbook([{ tool: 'billing.credits_balance', input: {} }, search('ada'), search('lovelace')]);
    const refused = await client.post('/v1/runs', body);
    expect(refused.status, refused.text).to.equal(402);
    expect(refused.body.detail).to.include({ error: 'insufficient_credits', required: 2, available: 1 });
    expect(refused.body.detail.kind).to.equal('ontology.search.hybrid');
    expect(refused.body.detail.estimate.steps.map((step: any) => step.credits)).to.deep.equal([0, 1, 1]);
    expect(await runsOf(tenant.workspace_id)).to.equal(0);
    expect(await creditBalance(tenant.tenant_id)).to.equal(1);

    // One it can pay runs, charged as it goes.
    const paid = await client.post('/v1/runs', playbook([search('ada')]));
    expect(paid.status, paid.text).to.equal(202);
    await succeeded(client, paid.body.execution_id);
    expect(await creditBalance(tenant.tenant_id)).to.equal(0);
  });

  it('?dry_run=true answers the estimate against the balance and dispatches nothing', async () => {
    const tenant = await newTenant(5);
    const client = as(tenant.api_key);
    const estimated = await client.post('/v1/runs?dry_run=true', playbook([search('ada'), search('lovelace')]));
    expect(estimated.status, estimated.text).to.equal(200);
    expect(estimated.body).to.deep.include({ balance: 5, locked: false, affordable: true });
    expect(estimated.body.estimate).to.deep.include({ credits: 2, complete: true });
    const tooMuch = await client.post(
      '/v1/runs?dry_run=true',
      playbook(Array.from({ length: 6 }, (_, at) => search(`q${at}`))),
    );
    expect(tooMuch.body).to.deep.include({ affordable: false });
    // The dispatch's own checks still apply: an unknown tool is a 422.
    const bad = await client.post('/v1/runs?dry_run=true', playbook([{ tool: 'nope.nothing', input: {} }]));
    expect(bad.status).to.equal(422);
    // An llm run's cost is the model's choice: an estimate of nothing, not complete.
    const llm = await client.post('/v1/runs?dry_run=true', { agent: 'llm', input: { goal: 'Find Ada' } });
    expect(llm.body.estimate).to.deep.include({ credits: 0, complete: false });
    expect(await runsOf(tenant.workspace_id)).to.equal(0);
  });

  it('a repeated idempotency key answers its earlier run even when the balance no longer pays it', async () => {
    const tenant = await newTenant(1);
    const client = as(tenant.api_key);
    const body = { ...playbook([search('ada')]), idempotency_key: 'admission-repeat' };
    const first = await client.post('/v1/runs', body);
    expect(first.status, first.text).to.equal(202);
    await succeeded(client, first.body.execution_id);
    const again = await client.post('/v1/runs', body);
    expect(again.status, again.text).to.equal(202);
    expect(again.body).to.include({ execution_id: first.body.execution_id, was_duplicate: true });
  });

  it('a webhook delivery whose run the balance cannot pay dispatches nothing and says why', async () => {
    const tenant = await newTenant(1);
    const client = as(tenant.api_key);
    const trigger = await newTrigger(tenant.api_key, { run: playbook([search('ada'), search('lovelace')]) });
    const delivered = await deliver(trigger.slug, JSON.stringify({ n: 1 }), { secret: trigger.secret });
    expect(delivered.status, delivered.text).to.equal(202);
    expect(delivered.body.execution_id).to.equal(undefined);
    const deliveries = (await client.get(`/v1/triggers/${trigger.id}/deliveries`)).body;
    const refused = deliveries.find((d: any) => d.delivery_id === delivered.body.delivery_id);
    expect(refused.reason).to.equal('insufficient_credits: the run’s priced steps cost 2 credits, the balance has 1');
    expect(await runsOf(tenant.workspace_id)).to.equal(0);
    expect(await creditBalance(tenant.tenant_id)).to.equal(1);
  });

  it('a schedule’s fire its balance cannot pay is skipped with the reason; the schedule stays active', async () => {
    const tenant = await newTenant(1);
    const client = as(tenant.api_key);
    const created = await client.post('/v1/run-schedules', {
      cron: '0 3 1 1 *',
      timezone: 'UTC',
      overlap: 'allow',
      run: playbook([search('ada'), search('lovelace')]),
    });
    expect(created.status, created.text).to.equal(201);
    const id = created.body.id;
    try {
      expect((await client.post(`/v1/run-schedules/${id}/trigger`)).status).to.equal(202);
      const skipped = await eventually(
        async () => {
          const read = await client.get(`/v1/run-schedules/${id}`);
          return read.body.last_refusal ? read.body : undefined;
        },
        { what: 'the fire to be skipped' },
      );
      expect(skipped.last_refusal.reason).to.match(/^insufficient_credits: the run’s priced steps cost 2 credits/);
      expect(skipped.paused, 'a later fire may be paid for').to.equal(false);
      expect(await runsOf(tenant.workspace_id)).to.equal(0);
    } finally {
      await client.delete(`/v1/run-schedules/${id}`);
      await scheduleGone(id);
    }
  });
});
