import { monitorEventLoopDelay } from 'node:perf_hooks';
import { expect } from 'chai';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';
import { deliver, newTrigger, playbook } from './helpers/webhooks';

/** The review's doubling multi-select chain (H-2): each step doubles the result. */
const doubling = (n: number) => `[@,@]${'[].[@,@]'.repeat(n - 1)}`;

describe('webhook intake: a filter runs under a budget (issue 23 item 4, review H-2)', () => {
  it('refuses at save a filter whose static fan-out is too large (422 with the reason)', async () => {
    const { api_key } = await newTenant();
    const chain = doubling(23);
    expect(chain.length).to.be.within(170, 190);
    const refused = await as(api_key).post('/v1/triggers', {
      slug: 'fanout-hook',
      run: playbook,
      event_filter: { expression: chain },
    });
    expect(refused.status).to.equal(422);
    expect(refused.body.detail[0].loc).to.deep.equal(['body', 'event_filter', 'expression']);
    expect(refused.body.detail[0].msg).to.match(/times its input/);
    const trigger = await newTrigger(api_key);
    const patched = await as(api_key).patch(`/v1/triggers/${trigger.id}`, { event_filter: { expression: chain } });
    expect(patched.status).to.equal(422);
  });

  it('ends a hostile saved filter as filter_error in bounded time, dispatching nothing, the API responsive', async () => {
    const { api_key, workspace_id } = await newTenant();
    const trigger = await newTrigger(api_key);
    // Saved before the save-time check existed: the runtime budget alone must hold it.
    await getStack().ownerDataSource.query(`UPDATE webhook_triggers SET filter_expression = $2 WHERE id = $1`, [
      trigger.id,
      doubling(23),
    ]);
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const started = Date.now();
    const hostile = deliver(trigger.slug, '{"a":1}', { secret: trigger.secret });
    // Meanwhile another tenant's requests are answered.
    const other = await newTenant();
    const probes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const at = Date.now();
      expect((await as(other.api_key).get('/v1/triggers')).status).to.equal(200);
      probes.push(Date.now() - at);
    }
    const sent = await hostile;
    const took = Date.now() - started;
    delay.disable();
    expect(sent.status, JSON.stringify(sent.body)).to.equal(202);
    expect(sent.body).not.to.have.property('execution_id');
    expect(took).to.be.below(3000);
    expect(Math.max(...probes)).to.be.below(1000);
    // The event loop never stalled for the filter (it stalls ~1-4 s when the filter runs inline).
    expect(delay.max / 1e6).to.be.below(250);
    const record = await as(api_key).get(`/v1/triggers/${trigger.id}/deliveries/${sent.body.delivery_id}`);
    expect(record.body).to.include({ filter_result: 'error', execution_id: null });
    expect(record.body.filter_error).to.match(/^filter_budget: /);
    const [{ n }] = await getStack().ownerDataSource.query(
      `SELECT count(*) AS n FROM run_executions WHERE workspace_id = $1`,
      [workspace_id],
    );
    expect(Number(n)).to.equal(0);
    // The pool recovers: an ordinary filter afterwards answers as usual.
    await as(api_key).patch(`/v1/triggers/${trigger.id}`, { event_filter: { expression: 'body.a' } });
    const fine = await deliver(trigger.slug, '{"a":2}', { secret: trigger.secret });
    expect(fine.body.execution_id).to.be.a('string');
  });

  it('catches at runtime a filter that passes the save-time check but explodes on a large body', async () => {
    const { api_key } = await newTenant();
    // Fan-out 256, the most allowed, over a body of 400,000 numbers: about 100 million results.
    const expression = `body[]${'.[@,@][]'.repeat(8)}`;
    const trigger = await newTrigger(api_key, { event_filter: { expression } });
    const body = JSON.stringify(Array(400_000).fill(0));
    const started = Date.now();
    const sent = await deliver(trigger.slug, body, { secret: trigger.secret });
    expect(Date.now() - started).to.be.below(5000);
    expect(sent.status).to.equal(202);
    expect(sent.body).not.to.have.property('execution_id');
    const record = await as(api_key).get(`/v1/triggers/${trigger.id}/deliveries/${sent.body.delivery_id}`);
    expect(record.body.filter_result).to.equal('error');
    expect(record.body.filter_error).to.match(/^filter_budget: /);
  });
});
