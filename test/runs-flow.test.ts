import { expect } from 'chai';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { scheduleGone } from './helpers/run-schedules';
import { succeeded } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';
import { deliver, newTrigger } from './helpers/webhooks';

// Issue 43 item 2: flow control on runs (throttle, rate limit, debounce), over real HTTP, Postgres and Temporal.

/** A one-step run that succeeds at once; `params` ride in its input (where key expressions read). */
const quick = (flow: Record<string, unknown>, params: Record<string, unknown> = {}) => ({
  agent: 'playbook',
  input: { steps: [{ tool: 'billing.credits_balance', input: {} }], params },
  flow,
});

const owner = () => getStack().ownerDataSource;

/**
 * When each run was let start, as its events tell (Postgres' clock): the event that cleared its
 * `queued_reason` (or its dispatch's, when it never waited), in the order they were written.
 */
const startsOf = async (ids: string[]) =>
  (
    (await owner().query(
      `SELECT DISTINCT ON (execution_id) execution_id, created_at, seq FROM run_events
        WHERE execution_id = ANY($1) AND type = 'run.status' AND data->>'status' = 'QUEUED'
          AND data->>'queued_reason' IS NULL
        ORDER BY execution_id, seq`,
      [ids],
    )) as { execution_id: string; created_at: Date; seq: string }[]
  ).sort((a, b) => Number(a.seq) - Number(b.seq));

describe('runs: flow control (issue 43 item 2)', function () {
  this.timeout(180_000);

  it('throttle: at most `limit` starts per period; the rest wait QUEUED and start in dispatch order', async () => {
    const { api_key, workspace_id } = await newTenant();
    const client = as(api_key);
    const period = 3;
    const throttle = { key: 'imports', limit: 2, period_seconds: period };
    const answers = await Promise.all(
      Array.from({ length: 7 }, (_, i) => client.post('/v1/runs', quick({ throttle }, { i }))),
    );
    expect(answers.map((answer) => answer.status)).to.deep.equal(Array(7).fill(202));
    // Dispatch order is the order the dispatches took the key's lock in.
    const dispatched = (await owner().query(
      `SELECT id, created_at FROM run_executions WHERE workspace_id = $1 AND throttle_key = 'imports'
        ORDER BY dispatch_seq`,
      [workspace_id],
    )) as { id: string; created_at: Date }[];
    const ids = dispatched.map((row) => row.id);
    const reasons = new Map(answers.map((answer) => [answer.body.execution_id, answer.body.queued_reason]));
    const span = dispatched.at(-1)!.created_at.getTime() - dispatched[0]!.created_at.getTime();
    if (span < period * 1000) {
      // All seven inside one period: the first two start, the other five wait.
      expect(ids.map((id) => reasons.get(id))).to.deep.equal([null, null, ...Array(5).fill('throttled')]);
    }
    const last = await client.get(`/v1/runs/${ids[6]}`);
    if (last.body.status === 'QUEUED') {
      expect(last.body).to.include({ queued_reason: 'throttled' });
      expect(last.body.flow).to.include({ throttle_key: 'imports', debounce_key: null });
      expect(Date.parse(last.body.flow.starts_at)).to.be.at.least(Date.parse(last.body.created_at));
    }

    // Another key is not held by this one's queue.
    const other = await client.post('/v1/runs', quick({ throttle: { ...throttle, key: 'exports' } }));
    expect(other.body.queued_reason).to.equal(null);

    for (const id of ids) await succeeded(client, id, { timeoutMs: 60_000 });
    const starts = await startsOf(ids);
    expect(
      starts.map((s) => s.execution_id),
      'started in dispatch order',
    ).to.deep.equal(ids);
    const at = starts.map((s) => s.created_at.getTime());
    // Any `limit + 1` consecutive starts span at least one period: no period holds more than `limit`.
    for (let i = 0; i + 2 < at.length; i++) {
      expect(at[i + 2]! - at[i]!, `starts ${i} and ${i + 2}`).to.be.at.least(period * 1000);
    }
  });

  it('rate_limit: over the limit 429 with Retry-After and the contract body; keys by JMESPath apart', async () => {
    const { api_key, workspace_id } = await newTenant();
    const client = as(api_key);
    const rateLimit = { key_expression: 'params.repo', limit: 2, period_seconds: 60 };
    const first = await client.post('/v1/runs', quick({ rate_limit: rateLimit }, { repo: 'a' }));
    const second = await client.post('/v1/runs', quick({ rate_limit: rateLimit }, { repo: 'a' }));
    expect([first.status, second.status]).to.deep.equal([202, 202]);
    const refused = await client.post('/v1/runs', quick({ rate_limit: rateLimit }, { repo: 'a' }));
    expect(refused.status, refused.text).to.equal(429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).to.be.within(1, 60);
    expect(refused.body.detail).to.include({ error: 'run_rate_limited', rate_limit_key: 'a' });
    expect(refused.body.detail.retry_after_seconds).to.equal(retryAfter);
    // Another repository's key has its own window.
    const otherRepo = await client.post('/v1/runs', quick({ rate_limit: rateLimit }, { repo: 'b' }));
    expect(otherRepo.status, otherRepo.text).to.equal(202);
    const run = await client.get(`/v1/runs/${otherRepo.body.execution_id}`);
    expect(run.body.flow).to.include({ rate_limit_key: 'b' });
    // Nothing of the refused dispatch was written.
    const [{ n }] = await owner().query(
      `SELECT count(*)::int AS n FROM run_executions WHERE workspace_id = $1 AND rate_limit_key = 'a'`,
      [workspace_id],
    );
    expect(n).to.equal(2);
  });

  it('debounce: N dispatches collapse into one run with the last input, started a period after the last', async () => {
    const { api_key, workspace_id } = await newTenant();
    const client = as(api_key);
    const debounce = { key_expression: 'params.doc', period_seconds: 2 };
    const answers = [];
    let beforeLast = new Date(0);
    for (let n = 0; n < 5; n++) {
      if (n === 4) [{ now: beforeLast }] = await owner().query('SELECT now() AS now');
      const answer = await client.post('/v1/runs', quick({ debounce }, { doc: 'd1', n }));
      expect(answer.status, answer.text).to.equal(202);
      answers.push(answer.body);
    }
    const id = answers[0].execution_id;
    expect(answers.map((a) => a.execution_id)).to.deep.equal(Array(5).fill(id));
    expect(answers.map((a) => a.debounced)).to.deep.equal([false, true, true, true, true]);
    expect(answers.every((a) => a.queued_reason === 'debounced')).to.equal(true);
    const waiting = await client.get(`/v1/runs/${id}`);
    expect(waiting.body).to.include({ status: 'QUEUED', queued_reason: 'debounced' });
    expect(waiting.body.flow.debounce_key).to.equal('d1');

    const run = await succeeded(client, id, { timeoutMs: 60_000 });
    expect(run.input.params).to.deep.equal({ doc: 'd1', n: 4 });
    expect(run.steps).to.have.length(1);
    const rows = await owner().query(
      `SELECT count(*)::int AS n FROM run_executions WHERE workspace_id = $1 AND debounce_key = 'd1'`,
      [workspace_id],
    );
    expect(rows[0].n, 'one run for five dispatches').to.equal(1);
    // It started no sooner than one period after the last dispatch (Postgres' clock for both).
    const [started] = await startsOf([id]);
    expect(started!.created_at.getTime() - beforeLast.getTime()).to.be.at.least(2000);

    // A dispatch after the run started begins a new one.
    const later = await client.post('/v1/runs', quick({ debounce }, { doc: 'd1', n: 5 }));
    expect(later.body.execution_id).to.not.equal(id);
    expect(later.body.debounced).to.equal(false);
    // Another key is another run.
    const otherDoc = await client.post('/v1/runs', quick({ debounce }, { doc: 'd2' }));
    expect(otherDoc.body.execution_id).to.not.equal(later.body.execution_id);
  });

  it('bad flow is 422: both key forms, a bad expression, throttle with debounce, flow beside enqueue', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const bodies = [
      quick({ throttle: { key: 'k', key_expression: 'a', limit: 1, period_seconds: 1 } }),
      quick({ rate_limit: { limit: 1, period_seconds: 1 } }),
      quick({ debounce: { key_expression: 'a[', period_seconds: 1 } }),
      quick({ throttle: { key: 'k', limit: 0, period_seconds: 1 } }),
      quick({ debounce: { key: 'k', period_seconds: 10 ** 9 } }),
      quick({ throttle: { key: 'k', limit: 1, period_seconds: 1 }, debounce: { key: 'k', period_seconds: 1 } }),
      { ...quick({ debounce: { key: 'k', period_seconds: 1 } }), concurrency: { key: 'c', policy: 'enqueue' } },
    ];
    for (const body of bodies) {
      const answer = await client.post('/v1/runs', body);
      expect(answer.status, JSON.stringify(body)).to.equal(422);
      expect(answer.body.detail[0]).to.have.keys('loc', 'msg', 'type');
    }
  });

  it('webhook trigger: a rate-limited delivery says `rate_limited`; a debounced one answers the same run', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const rateLimited = await newTrigger(api_key, {
      run: quick({ rate_limit: { key_expression: 'event.body.repository.id', limit: 1, period_seconds: 60 } }),
    });
    // Each body differs: the same signed body twice is a replay the intake answers as a duplicate.
    let nonce = 0;
    const push = (id: number) => JSON.stringify({ repository: { id }, nonce: nonce++ });
    const accepted = await deliver(rateLimited.slug, push(7), { secret: rateLimited.secret });
    const over = await deliver(rateLimited.slug, push(7), { secret: rateLimited.secret });
    const otherRepo = await deliver(rateLimited.slug, push(8), { secret: rateLimited.secret });
    expect([accepted.status, over.status, otherRepo.status]).to.deep.equal([202, 202, 202]);
    expect(accepted.body.execution_id).to.be.a('string');
    expect(over.body.execution_id).to.equal(undefined);
    expect(otherRepo.body.execution_id).to.be.a('string');
    const deliveries = await client.get(`/v1/triggers/${rateLimited.id}/deliveries`);
    const refused = deliveries.body.find((d: any) => d.delivery_id === over.body.delivery_id);
    expect(refused.reason).to.match(/^rate_limited: retry after \d+ s$/);

    const debounced = await newTrigger(api_key, {
      run: quick({ debounce: { key_expression: 'event.body.repository.id', period_seconds: 2 } }),
    });
    const one = await deliver(debounced.slug, JSON.stringify({ repository: { id: 1 }, n: 1 }), {
      secret: debounced.secret,
    });
    const two = await deliver(debounced.slug, JSON.stringify({ repository: { id: 1 }, n: 2 }), {
      secret: debounced.secret,
    });
    expect(two.body.execution_id).to.equal(one.body.execution_id);
    const run = await succeeded(client, one.body.execution_id, { timeoutMs: 60_000 });
    expect(run.input.event.body.n).to.equal(2);
  });

  it('a schedule: a fire over its rate limit is skipped with the reason, and the schedule stays active', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const created = await client.post('/v1/run-schedules', {
      cron: '0 3 1 1 *',
      timezone: 'UTC',
      overlap: 'allow',
      paused: true,
      run: quick({ rate_limit: { key: 'nightly', limit: 1, period_seconds: 3600 } }),
    });
    expect(created.status, created.text).to.equal(201);
    const id = created.body.id;
    try {
      await skipsOverItsRateLimit(client, id);
    } finally {
      await client.delete(`/v1/run-schedules/${id}`);
      await scheduleGone(id);
    }
  });
});

/** Two fires of a paused schedule whose run's rate limit allows one an hour: one run, one skip. */
async function skipsOverItsRateLimit(client: ReturnType<typeof as>, id: string) {
  const runs = async () => (await client.get(`/v1/runs?schedule_id=${id}`)).body.runs as any[];
  expect((await client.post(`/v1/run-schedules/${id}/trigger`)).status).to.equal(202);
  const [first] = await eventually(async () => ((await runs()).length === 1 ? runs() : undefined), {
    what: 'the first fire’s run',
  });
  await succeeded(client, first.execution_id);
  // Temporal names a manual fire's workflow by the second it fired in: a second trigger within that second,
  // while the first fire's workflow still waits to see its run end, would be dropped as already running.
  await eventually(
    async () => {
      const read = await client.get(`/v1/run-schedules/${id}`);
      return read.body.temporal?.running.length === 0 ? true : undefined;
    },
    { what: 'the first fire’s workflow to end' },
  );
  expect((await client.post(`/v1/run-schedules/${id}/trigger`)).status).to.equal(202);
  const skipped = await eventually(
    async () => {
      const read = await client.get(`/v1/run-schedules/${id}`);
      return read.body.last_refusal ? read.body : undefined;
    },
    { what: 'the second fire to be skipped' },
  );
  expect(skipped.last_refusal.reason).to.match(/^rate_limited: /);
  expect(skipped.paused, 'still paused only as it was created').to.equal(true);
  expect(skipped.note ?? null).to.not.match(/rate_limited/);
  expect(await runs()).to.have.length(1);
}
