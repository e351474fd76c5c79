import { expect } from 'chai';
import Stripe from 'stripe';
import { scheduleId } from '../src/app/schedules';
import { runCallbackRetentionWorkflow } from '../src/run-callbacks/workflow';
import { startReceiver, verifyCallback } from './helpers/callback-receiver';
import { useCallbackStack } from './helpers/callback-stack';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { finished, pendingApproval, succeeded } from './helpers/runs';
import { newTenant } from './helpers/tenants';

// Issue 26 part 2: signed completion callbacks, over real HTTP, to a real local receiver that
// verifies every signature with its own code and with Stripe's library. This stack allows the
// loopback receiver (RUN_CALLBACK_ALLOW_PRIVATE) and retries fast; the suite's main stack does
// neither, which the SSRF test uses.

const nowSeconds = () => Math.floor(Date.now() / 1000);
const quick = [{ tool: 'billing.credits_balance', input: {} }];
const gated = [{ tool: 'billing.credits_balance', input: {}, requires_approval: true }];

describe('run callbacks (issue 26 part 2)', function () {
  this.timeout(90_000);
  const callbacks = useCallbackStack();
  let client: ReturnType<typeof as>;
  before(async () => {
    client = as((await newTenant(100)).api_key, callbacks.stack.baseUrl);
  });

  /** Both verifications a receiver could use: its own code, and Stripe's library (the same scheme). */
  function expectSigned(request: { headers: Record<string, unknown>; body: string }, secret: string) {
    const header = request.headers['x-service-signature'] as string;
    expect(verifyCallback(header, request.body, secret, nowSeconds()), 'own verification').to.equal(true);
    const event = Stripe.webhooks.constructEvent(request.body, header, secret) as unknown as { id: string };
    expect(event.id).to.equal(JSON.parse(request.body).id);
    expect(verifyCallback(header, request.body, `${secret}x`, nowSeconds()), 'another secret').to.equal(false);
  }

  const dispatch = async (steps: unknown[], callback: Record<string, unknown>) => {
    const dispatched = await client.post('/v1/runs', { agent: 'playbook', input: { steps }, callback });
    expect(dispatched.status, dispatched.text).to.equal(202);
    return dispatched.body;
  };

  const deliveriesOfRun = async (executionId: string) => {
    const listed = await client.get(`/v1/runs/${executionId}/callbacks`);
    expect(listed.status, listed.text).to.equal(200);
    return listed.body.deliveries as any[];
  };

  it('POSTs one signed run.finished to a dispatch’s callback, and redelivers it with the same key', async () => {
    const body0 = {
      agent: 'playbook',
      input: { steps: quick },
      callback: { url: callbacks.receiver.url('/finished') },
      idempotency_key: `callbacks-${Date.now()}`,
    };
    const first = await client.post('/v1/runs', body0);
    expect(first.status, first.text).to.equal(202);
    const run = first.body;
    // A duplicate dispatch answers the same run, without the secret and without a second callback.
    const duplicate = await client.post('/v1/runs', body0);
    expect(duplicate.body).to.include({ execution_id: run.execution_id, was_duplicate: true });
    expect(duplicate.body).to.not.have.property('callback');
    expect(run.callback.events).to.deep.equal(['run.finished']);
    expect(run.callback.secret).to.match(/^whsec_/);
    await succeeded(client, run.execution_id);
    const [post] = await eventually(
      async () => (callbacks.receiver.at('/finished').length ? callbacks.receiver.at('/finished') : undefined),
      {
        what: 'the callback',
      },
    );
    expectSigned(post!, run.callback.secret);
    const body = JSON.parse(post!.body);
    expect(body).to.include.keys('id', 'type', 'created_at', 'data');
    expect(body.type).to.equal('run.finished');
    expect(body.data).to.include({ execution_id: run.execution_id, status: 'SUCCEEDED', agent: 'playbook' });
    expect(post!.headers['content-type']).to.equal('application/json');

    const [delivery] = await eventually(
      async () => {
        const listed = await deliveriesOfRun(run.execution_id);
        return listed[0]?.status === 'delivered' ? listed : undefined;
      },
      { what: 'the delivery recorded' },
    );
    expect(delivery.attempts).to.have.length(1);
    expect(delivery.attempts[0]).to.include({ outcome: 'succeeded', response_code: 200, response_body: 'ok' });
    expect(delivery.attempts[0].latency_ms).to.be.a('number');
    expect(post!.headers['x-service-idempotency-key']).to.equal(delivery.delivery_id);
    expect(delivery.body).to.equal(post!.body);
    expect(callbacks.receiver.at('/finished')).to.have.length(1);

    const redelivered = await client.post(`/v1/runs/${run.execution_id}/callbacks/${delivery.delivery_id}/redeliver`);
    expect(redelivered.status, redelivered.text).to.equal(202);
    expect(redelivered.body).to.deep.equal({ delivery_id: delivery.delivery_id, series: 1, status: 'pending' });
    const again = await eventually(async () => callbacks.receiver.at('/finished')[1], { what: 'the redelivery' });
    expect(again.body).to.equal(post!.body);
    expect(again.headers['x-service-idempotency-key']).to.equal(delivery.delivery_id);
    expectSigned(again, run.callback.secret);
    const after = await eventually(
      async () => {
        const [row] = await deliveriesOfRun(run.execution_id);
        return row.attempts.length === 2 && row.status === 'delivered' ? row : undefined;
      },
      { what: 'the second attempt recorded' },
    );
    expect(after.series).to.equal(1);
  });

  it('approval.requested carries the deadline and approvers an approval rule set (issue 32)', async () => {
    const tenant = await newTenant(10);
    const own = as(tenant.api_key, callbacks.stack.baseUrl);
    const approvers = { min: 1, from: [tenant.user_id] };
    const rules = {
      rules: [
        {
          match: { tool: 'billing.credits_balance' },
          action: 'require_approval',
          approvers,
          deadline: { after_seconds: 600, on_expiry: 'reject' },
        },
      ],
      default_action: 'allow',
    };
    expect((await as(tenant.user_jwt, callbacks.stack.baseUrl).put('/v1/approval-policies', rules)).status).to.equal(
      200,
    );
    const dispatched = await own.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: quick },
      callback: { url: callbacks.receiver.url('/deadline'), events: ['approval.requested'] },
    });
    expect(dispatched.status, dispatched.text).to.equal(202);
    const approval = await pendingApproval(own, dispatched.body.execution_id);
    const told = await eventually(async () => callbacks.receiver.at('/deadline')[0], { what: 'approval.requested' });
    expect(JSON.parse(told.body).data).to.deep.include({
      approval_id: approval.approval_id,
      expires_at: approval.expires_at,
      approvers,
    });
    expect((await own.post(`/v1/runs/${dispatched.body.execution_id}/cancel`)).status).to.equal(200);
  });

  it('tells a standing subscription approval.requested, then run.finished when the run is cancelled', async () => {
    const created = await client.post('/v1/run-callbacks', {
      url: callbacks.receiver.url('/standing'),
      events: ['approval.requested', 'run.finished'],
      description: 'reviewer tool',
    });
    expect(created.status, created.text).to.equal(201);
    const { secret, id } = created.body;
    expect((await client.get(`/v1/run-callbacks/${id}`)).body).to.not.have.property('secret');
    expect((await client.get('/v1/run-callbacks')).body.callbacks.map((row: any) => row.id)).to.include(id);

    const run = await dispatch(gated, { url: callbacks.receiver.url('/own-approval'), events: ['approval.requested'] });
    const approval = await pendingApproval(client, run.execution_id);
    const requested = await eventually(
      async () =>
        callbacks.receiver
          .at('/standing')
          .map((request) => ({ request, body: JSON.parse(request.body) }))
          .find((entry) => entry.body.data.execution_id === run.execution_id),
      { what: 'approval.requested' },
    );
    expectSigned(requested.request, secret);
    expect(requested.body.type).to.equal('approval.requested');
    expect(requested.body.data).to.include({
      status: 'AWAITING_APPROVAL',
      approval_id: approval.approval_id,
      step_no: 0,
      tool: 'billing.credits_balance',
    });
    // The run's own callback asked for the approval too, with its own secret; same event id.
    const own = await eventually(async () => callbacks.receiver.at('/own-approval')[0], {
      what: 'the run’s own callback',
    });
    expectSigned(own, run.callback.secret);
    expect(JSON.parse(own.body).id).to.equal(requested.body.id);

    expect((await client.post(`/v1/runs/${run.execution_id}/cancel`)).status).to.equal(200);
    const ended = await eventually(
      async () =>
        callbacks.receiver
          .at('/standing')
          .map((request) => JSON.parse(request.body))
          .find((body) => body.type === 'run.finished' && body.data.execution_id === run.execution_id),
      { what: 'run.finished after the cancel' },
    );
    expect(ended.data.status).to.equal('CANCELLED');
    // The run's own callback did not ask for run.finished.
    expect(callbacks.receiver.at('/own-approval')).to.have.length(1);

    const listed = await client.get(`/v1/run-callbacks/${id}/deliveries`);
    expect(listed.status).to.equal(200);
    expect(listed.body.deliveries.map((row: any) => row.event_type)).to.include.members([
      'approval.requested',
      'run.finished',
    ]);
    expect((await client.delete(`/v1/run-callbacks/${id}`)).status).to.equal(200);
    expect((await client.get(`/v1/run-callbacks/${id}`)).status).to.equal(404);
  });

  it('retries after 500s with backoff and records every attempt, then succeeds', async () => {
    callbacks.receiver.answer('/flaky', { status: 500, body: 'boom' }, { status: 503, body: 'later' }, { status: 204 });
    const run = await dispatch(quick, { url: callbacks.receiver.url('/flaky') });
    await finished(client, run.execution_id);
    const delivery = await eventually(
      async () => {
        const [row] = await deliveriesOfRun(run.execution_id);
        return row?.status === 'delivered' ? row : undefined;
      },
      { what: 'the delivery after retries', timeoutMs: 30_000 },
    );
    expect(delivery.attempts.map((a: any) => [a.attempt_no, a.outcome, a.response_code])).to.deep.equal([
      [1, 'failed', 500],
      [2, 'failed', 503],
      [3, 'succeeded', 204],
    ]);
    expect(delivery.attempts[0].response_body).to.equal('boom');
    const posts = callbacks.receiver.at('/flaky');
    expect(posts).to.have.length(3);
    // One event: the same body and idempotency key each time, each signed.
    expect(new Set(posts.map((post) => post.headers['x-service-idempotency-key']))).to.deep.equal(
      new Set([delivery.delivery_id]),
    );
    expect(new Set(posts.map((post) => post.body)).size).to.equal(1);
    for (const post of posts) expectSigned(post, run.callback.secret);
  });

  it('follows no redirect: a 3xx is a failed attempt and its Location is never called', async () => {
    callbacks.receiver.answer('/moved', { status: 302, headers: { location: callbacks.receiver.url('/elsewhere') } });
    callbacks.receiver.answer('/moved-own', {
      status: 301,
      headers: { location: callbacks.receiver.url('/elsewhere') },
    });
    const created = await client.post('/v1/run-callbacks', { url: callbacks.receiver.url('/moved') });
    const run = await dispatch(quick, { url: callbacks.receiver.url('/moved-own') });
    await finished(client, run.execution_id);
    const delivery = await eventually(
      async () => {
        const [row] = await deliveriesOfRun(run.execution_id);
        return row?.attempts.length >= 2 ? row : undefined;
      },
      { what: 'two attempts' },
    );
    expect(delivery.status).to.equal('pending');
    expect(delivery.attempts[0]).to.include({ outcome: 'failed', response_code: 301 });
    expect(delivery.attempts[0].error).to.match(/redirect/i);
    expect(callbacks.receiver.at('/elsewhere')).to.have.length(0);
    // Deleting the subscription ends its retries; the run's own callback goes with its run's cleanup below.
    expect((await client.delete(`/v1/run-callbacks/${created.body.id}`)).status).to.equal(200);
    await callbacks.stack.ownerDataSource.query(`DELETE FROM run_callback_subscriptions WHERE execution_id = $1`, [
      run.execution_id,
    ]);
  });

  it('stops delivering once the creating credential is revoked, and records why', async () => {
    const tenant = await newTenant(100);
    const owner = as(tenant.user_jwt, callbacks.stack.baseUrl);
    const key = await owner.post('/v1/auth/me/api-keys', {
      name: 'callbacks',
      scopes: ['run_callbacks:manage', 'runs:read'],
    });
    expect(key.status, key.text).to.equal(201);
    const narrow = as(key.body.token, callbacks.stack.baseUrl);
    const created = await narrow.post('/v1/run-callbacks', { url: callbacks.receiver.url('/revoked') });
    expect(created.status, created.text).to.equal(201);
    expect((await owner.delete(`/v1/auth/me/api-keys/${key.body.id}`)).status).to.equal(200);

    const run = await owner.post('/v1/runs', { agent: 'playbook', input: { steps: quick } });
    await succeeded(owner, run.body.execution_id);
    const delivery = await eventually(
      async () => {
        const listed = await owner.get(`/v1/run-callbacks/${created.body.id}/deliveries`);
        return listed.body.deliveries[0]?.status === 'stopped' ? listed.body.deliveries[0] : undefined;
      },
      { what: 'the delivery stopped' },
    );
    expect(delivery.attempts.map((a: any) => a.outcome)).to.deep.equal(['credential_revoked']);
    expect(callbacks.receiver.at('/revoked')).to.have.length(0);
  });

  it('shows deliveries, which carry run outputs, only to a credential that also reads runs (review NL-1)', async () => {
    const tenant = await newTenant(100);
    const owner = as(tenant.user_jwt, callbacks.stack.baseUrl);
    const created = await owner.post('/v1/run-callbacks', { url: callbacks.receiver.url('/nl-1') });
    expect(created.status, created.text).to.equal(201);
    const run = await owner.post('/v1/runs', { agent: 'playbook', input: { steps: quick } });
    await succeeded(owner, run.body.execution_id);
    const [delivery] = await eventually(
      async () => {
        const listed = await owner.get(`/v1/run-callbacks/${created.body.id}/deliveries`);
        return listed.body.deliveries.length ? listed.body.deliveries : undefined;
      },
      { what: 'the subscription’s delivery' },
    );
    expect(JSON.parse(delivery.body).data.output).to.include({ balance: 100 });

    const keyWith = async (scopes: string[]) => {
      const key = await owner.post('/v1/auth/me/api-keys', { name: scopes.join(' '), scopes });
      expect(key.status, key.text).to.equal(201);
      return as(key.body.token, callbacks.stack.baseUrl);
    };
    // The review's reproduction: the manage scope alone read the run's output through the deliveries.
    const manageOnly = await keyWith(['run_callbacks:manage']);
    expect((await manageOnly.get(`/v1/runs/${run.body.execution_id}`)).status).to.equal(403);
    const refused = await manageOnly.get(`/v1/run-callbacks/${created.body.id}/deliveries`);
    expect(refused.status, refused.text).to.equal(403);
    expect(refused.body.detail).to.match(/runs:read/);
    expect(refused.text).to.not.contain('balance');
    // What carries no output stays the manage scope's: the subscriptions themselves.
    expect((await manageOnly.get(`/v1/run-callbacks/${created.body.id}`)).status).to.equal(200);
    expect((await manageOnly.get('/v1/run-callbacks')).body.callbacks).to.have.length(1);

    const reader = await keyWith(['run_callbacks:manage', 'runs:read']);
    const shown = await reader.get(`/v1/run-callbacks/${created.body.id}/deliveries`);
    expect(shown.status, shown.text).to.equal(200);
    expect(JSON.parse(shown.body.deliveries[0].body).data.output).to.include({ balance: 100 });
    expect((await owner.delete(`/v1/run-callbacks/${created.body.id}`)).status).to.equal(200);
  });

  it('keeps workspaces apart: another cannot read, list or redeliver a subscription or a run’s callbacks', async () => {
    const created = await client.post('/v1/run-callbacks', { url: callbacks.receiver.url('/mine') });
    const run = await dispatch(quick, { url: callbacks.receiver.url('/mine-own') });
    await succeeded(client, run.execution_id);
    const [delivery] = await eventually(
      async () => {
        const listed = await deliveriesOfRun(run.execution_id);
        return listed.length ? listed : undefined;
      },
      { what: 'a delivery' },
    );
    const other = as((await newTenant()).api_key, callbacks.stack.baseUrl);
    const id = created.body.id;
    expect((await other.get(`/v1/run-callbacks/${id}`)).status).to.equal(404);
    expect((await other.get(`/v1/run-callbacks/${id}/deliveries`)).status).to.equal(404);
    expect((await other.get('/v1/run-callbacks')).body.callbacks).to.deep.equal([]);
    expect((await other.delete(`/v1/run-callbacks/${id}`)).status).to.equal(404);
    expect((await other.post(`/v1/run-callbacks/${id}/deliveries/${delivery.delivery_id}/redeliver`)).status).to.equal(
      404,
    );
    expect((await other.get(`/v1/runs/${run.execution_id}/callbacks`)).status).to.equal(404);
    expect(
      (await other.post(`/v1/runs/${run.execution_id}/callbacks/${delivery.delivery_id}/redeliver`)).status,
    ).to.equal(404);
    // Nor through its own subscription's path with this delivery's id.
    const theirs = await other.post('/v1/run-callbacks', { url: callbacks.receiver.url('/theirs') });
    expect(
      (await other.post(`/v1/run-callbacks/${theirs.body.id}/deliveries/${delivery.delivery_id}/redeliver`)).status,
    ).to.equal(404);
    expect((await client.delete(`/v1/run-callbacks/${id}`)).status).to.equal(200);
  });

  it('deletes settled deliveries older than 30 days with the daily retention schedule; pending ones stay', async () => {
    const runs = [];
    for (let n = 0; n < 3; n += 1)
      runs.push((await dispatch(quick, { url: callbacks.receiver.url(`/old-${n}`) })).execution_id);
    const settled = [];
    for (const id of runs) {
      await succeeded(client, id);
      const [row] = await eventually(
        async () => {
          const listed = await deliveriesOfRun(id);
          return listed[0]?.status === 'delivered' ? listed : undefined;
        },
        { what: 'a delivery' },
      );
      settled.push(row.delivery_id);
    }
    const owner = callbacks.stack.ownerDataSource;
    // Two settled ones are old; the third is old but made pending again, so it stays.
    await owner.query(`UPDATE run_callback_deliveries SET created_at = now() - interval '31 days' WHERE id = ANY($1)`, [
      settled,
    ]);
    await owner.query(`UPDATE run_callback_deliveries SET status = 'pending' WHERE id = $1`, [settled[2]]);
    const { config, runtime } = callbacks.stack;
    const schedule = await runtime.temporal.client.schedule
      .getHandle(scheduleId(config.TEMPORAL_TASK_QUEUE, { name: 'run-callback-retention' }))
      .describe();
    expect(schedule.action).to.include({ workflowType: 'runCallbackRetentionWorkflow' });
    const handle = await runtime.temporal.workflows.start(runCallbackRetentionWorkflow, { batchSize: 1 });
    expect((await handle.result()).deleted).to.be.at.least(2);
    const left = await owner.query(`SELECT id FROM run_callback_deliveries WHERE id = ANY($1)`, [settled]);
    expect(left.map((row: any) => row.id)).to.deep.equal([settled[2]]);
    // Its attempts went with the two deleted deliveries.
    const attempts = await owner.query(
      `SELECT count(*)::int AS n FROM run_callback_attempts WHERE delivery_id = ANY($1)`,
      [settled.slice(0, 2)],
    );
    expect(attempts[0].n).to.equal(0);
    await owner.query(`UPDATE run_callback_deliveries SET status = 'delivered' WHERE id = $1`, [settled[2]]);
  });

  it('refuses malformed callbacks with 422 and the contract’s error body, writing nothing', async () => {
    const cases: unknown[] = [
      { url: 'ftp://example.com/x' },
      { url: 'not a url' },
      { url: `https://example.com/${'a'.repeat(2048)}` },
      { url: 'https://example.com/x', events: ['run.started'] },
      { url: 'https://example.com/x', events: [] },
      { url: 'https://example.com/x', extra: true },
    ];
    for (const body of cases) {
      const created = await client.post('/v1/run-callbacks', body);
      expect(created.status, JSON.stringify(body)).to.equal(422);
      expect(created.body.detail[0].loc[0]).to.equal('body');
      const dispatched = await client.post('/v1/runs', { agent: 'playbook', input: { steps: quick }, callback: body });
      expect(dispatched.status, JSON.stringify(body)).to.equal(422);
      expect(dispatched.body.detail[0].loc.slice(0, 2)).to.deep.equal(['body', 'callback']);
    }
    expect((await client.get('/v1/run-callbacks')).body.callbacks).to.deep.equal([]);
    // A subscription receives every run's output: the manage scope alone is not enough.
    const owner = as((await newTenant()).user_jwt, callbacks.stack.baseUrl);
    const key = await owner.post('/v1/auth/me/api-keys', { name: 'manage only', scopes: ['run_callbacks:manage'] });
    const manageOnly = await as(key.body.token, callbacks.stack.baseUrl).post('/v1/run-callbacks', {
      url: 'https://example.com/x',
    });
    expect(manageOnly.status, manageOnly.text).to.equal(403);
  });
});

describe('run callbacks without the private-address allowance (the main stack)', () => {
  it('refuses a loopback address: a literal at creation (422), a name resolved at connect time', async () => {
    const receiver = await startReceiver();
    try {
      const tenant = await newTenant(100);
      const client = as(tenant.api_key);
      for (const url of [receiver.url('/ssrf'), 'http://[::1]/x', 'http://[::ffff:127.0.0.1]/x', 'http://10.1.2.3/']) {
        const refused = await client.post('/v1/run-callbacks', { url });
        expect(refused.status, url).to.equal(422);
        expect(refused.body.detail[0]).to.include({ type: 'callback_address' });
      }
      // `localhost` is a name: accepted now, refused when the socket resolves it.
      const run = await client.post('/v1/runs', {
        agent: 'playbook',
        input: { steps: quick },
        callback: { url: receiver.url('/ssrf', 'localhost') },
      });
      expect(run.status, run.text).to.equal(202);
      await succeeded(client, run.body.execution_id);
      const delivery = await eventually(
        async () => {
          const [row] = (await client.get(`/v1/runs/${run.body.execution_id}/callbacks`)).body.deliveries;
          return row?.status === 'failed' ? row : undefined;
        },
        { what: 'the refused delivery' },
      );
      expect(delivery.attempts).to.have.length(1);
      expect(delivery.attempts[0]).to.include({ outcome: 'refused', response_code: null });
      expect(delivery.attempts[0].error).to.match(/private|loopback/);
      expect(receiver.at('/ssrf')).to.have.length(0);
    } finally {
      await receiver.stop();
    }
  });
});
