import { expect } from 'chai';
import { LIMITS } from '../src/rules/limits';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';
import { deliver, newTrigger } from './helpers/webhooks';

/** The review's doubling multi-select chain (H-2): it runs until the filter's time budget ends it. */
const hostile = `[@,@]${'[].[@,@]'.repeat(22)}`;

/** A trigger whose filter is the hostile one, saved behind the save-time check (as one saved before it existed). */
async function hostileTrigger(token: string) {
  const trigger = await newTrigger(token);
  await getStack().ownerDataSource.query(`UPDATE webhook_triggers SET filter_expression = $2 WHERE id = $1`, [
    trigger.id,
    hostile,
  ]);
  return trigger;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; result: T }> {
  const started = performance.now();
  const result = await work();
  return { ms: performance.now() - started, result };
}

// Issue 43 item 3 (review NM-8): one tenant's slow filters made every other tenant's filtered
// webhooks dispatch nothing.
describe('filters are shared fairly between workspaces (issue 43 item 3)', function () {
  this.timeout(120_000);

  it('while workspace A floods the pool with hostile filters, B’s filtered deliveries dispatch promptly', async () => {
    const a = await newTenant(100);
    const b = await newTenant(100);
    const theirs = await newTrigger(b.api_key, { event_filter: { expression: 'body.a' } });
    const send = (n: number) => deliver(theirs.slug, JSON.stringify({ a: n }), { secret: theirs.secret });

    // Idle baselines, in this test: B's filtered delivery, and one hostile delivery alone.
    await send(0);
    const idle: number[] = [];
    for (let i = 1; i <= 5; i++) {
      const { ms, result } = await timed(() => send(i));
      expect(result.body.execution_id, JSON.stringify(result.body)).to.be.a('string');
      idle.push(ms);
    }
    const alone = await hostileTrigger(a.api_key);
    const single = await timed(() => deliver(alone.slug, '{"a":1}', { secret: alone.secret }));
    expect(single.result.status).to.equal(202);

    // A's flood: more hostile deliveries at once than the pool can run in many budgets, on fresh triggers.
    const flooders = [await hostileTrigger(a.api_key), await hostileTrigger(a.api_key)];
    const flood = Array.from({ length: 40 }, (_, i) => {
      const trigger = flooders[i % flooders.length]!;
      return deliver(trigger.slug, JSON.stringify({ i }), { secret: trigger.secret });
    });
    // Let the flood fill the pool's queue, then B delivers.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const busy: number[] = [];
    for (let i = 10; i < 15; i++) {
      const { ms, result } = await timed(() => send(i));
      // B's outcome: dispatched, never `filter_busy` or a timeout of a filter waiting behind A's.
      expect(result.status).to.equal(202);
      expect(result.body.execution_id, JSON.stringify(result.body)).to.be.a('string');
      busy.push(ms);
    }
    const floodAnswers = await Promise.all(flood);
    // The flood was one: A's deliveries were still running their filters while B's went through.
    const records = await getStack().ownerDataSource.query(
      `SELECT count(*)::int AS n FROM webhook_deliveries WHERE workspace_id = $1 AND filter_result = 'error'`,
      [a.workspace_id],
    );
    expect(records[0].n).to.be.at.least(20);
    expect(floodAnswers.every((answer) => [202, 404].includes(answer.status))).to.equal(true);

    // Latency only as ratios to the idle baselines: B waits at most about one budget of A's (first come,
    // first served it waited behind all 40, about 20 budgets on 2 workers).
    const worst = Math.max(...busy);
    expect(
      worst,
      `B under flood ${busy.map(Math.round)} ms, one hostile filter alone ${Math.round(single.ms)} ms`,
    ).to.be.below(4 * single.ms);
    expect(
      median(busy) / median(idle),
      `B idle ${idle.map(Math.round)} ms, under flood ${busy.map(Math.round)} ms`,
    ).to.be.below(100);
  });

  const { suspendAfterTimeouts } = LIMITS.webhook.filter;
  it(`${suspendAfterTimeouts} budget failures in a row suspend the trigger; PATCH enables it`, async () => {
    const { api_key } = await newTenant(10);
    const trigger = await hostileTrigger(api_key);
    for (let i = 0; i < LIMITS.webhook.filter.suspendAfterTimeouts; i++) {
      const sent = await deliver(trigger.slug, JSON.stringify({ i }), { secret: trigger.secret });
      expect(sent.status).to.equal(202);
      expect(sent.body).not.to.have.property('execution_id');
    }
    const read = await as(api_key).get(`/v1/triggers/${trigger.id}`);
    expect(read.status).to.equal(200);
    expect(read.body.enabled).to.equal(false);
    expect(read.body.suspended.reason).to.match(/^filter_timeouts: its filter ran out of its budget 5 times in a row/);
    expect(Date.parse(read.body.suspended.at)).to.be.a('number');
    // Suspended, the slug takes nothing (as a disabled trigger's).
    expect((await deliver(trigger.slug, '{"a":1}', { secret: trigger.secret })).status).to.equal(404);

    // The owner fixes the filter and enables it: the suspension is cleared, and it dispatches again.
    const fixed = await as(api_key).patch(`/v1/triggers/${trigger.id}`, {
      event_filter: { expression: 'body.a' },
      enabled: true,
    });
    expect(fixed.status, fixed.text).to.equal(200);
    expect(fixed.body).to.include({ enabled: true, suspended: null });
    const again = await deliver(trigger.slug, '{"a":1}', { secret: trigger.secret });
    expect(again.body.execution_id).to.be.a('string');
  });
});
