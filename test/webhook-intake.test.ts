import { createHash, randomUUID } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { expect } from 'chai';
import { SignJWT } from 'jose';
import { revokeUserToken } from '../src/platform/auth/repository';
import { eventually, sleep } from './helpers/eventually';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { newMember, newTenant } from './helpers/tenants';
import { deliver, deliverFrom, inParallel, newTrigger, nowSeconds, playbook, sign } from './helpers/webhooks';

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

  it('ends a hostile saved filter as filter_error quickly, dispatching nothing, the API responsive', async () => {
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

const owner = () => getStack().ownerDataSource;
const runsOf = async (workspaceId: string) =>
  (await owner().query(`SELECT id, user_id FROM run_executions WHERE workspace_id = $1`, [workspaceId])) as {
    id: string;
    user_id: string;
  }[];

describe('webhook intake: unverified requests are not stored whole (review H-3)', () => {
  it('keeps a 401’s size, SHA-256, headers and first 256 bytes; a verified delivery keeps its body', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key, { event_filter: { expression: 'body.never' } });
    const big = Buffer.alloc(256 * 1024, 'x');
    const refused = await deliver(trigger.slug, big, { headers: { 'x-sender': 'anyone' } });
    expect(refused.status).to.equal(401);
    const record = await as(api_key).get(`/v1/triggers/${trigger.id}/deliveries/${refused.body.delivery_id}`);
    expect(record.body).to.include({
      status_code: 401,
      body_size: big.length,
      body_sha256: createHash('sha256').update(big).digest('hex'),
      body_truncated: true,
    });
    expect(Buffer.from(record.body.body_base64, 'base64').equals(big.subarray(0, 256))).to.equal(true);
    expect(record.body.headers).to.deep.include(['x-sender', 'anyone']);
    const [stored] = await owner().query(`SELECT octet_length(body) AS n FROM webhook_deliveries WHERE id = $1`, [
      refused.body.delivery_id,
    ]);
    expect(Number(stored.n)).to.equal(256);

    const accepted = await deliver(trigger.slug, big, { secret: trigger.secret });
    const kept = await as(api_key).get(`/v1/triggers/${trigger.id}/deliveries/${accepted.body.delivery_id}`);
    expect(kept.body).to.include({ status_code: 202, body_size: big.length, body_truncated: false });
    expect(Buffer.from(kept.body.body_base64, 'base64').equals(big)).to.equal(true);
  });
});

describe('webhook intake: rate limits before the body is read (review H-3)', () => {
  it('answers 429 + Retry-After past the per-slug limit, counts refusals on the trigger, reads no body', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key);
    const limit = getStack().config.WEBHOOK_INTAKE_PER_SLUG;
    // Unsigned from one source: each a 401 until the slug's allowance for the minute is spent.
    const answers = await inParallel(limit, 16, () => deliverFrom('127.0.0.5', trigger.slug, '{}'));
    expect(answers.filter((answer) => answer.status === 401)).to.have.length(limit);
    const refused = await deliverFrom('127.0.0.5', trigger.slug, '{}');
    expect(refused.status).to.equal(429);
    expect(Number(refused.headers['retry-after'])).to.be.within(1, 60);
    // A signed delivery from any source is refused as well: the limit is the slug's.
    const signed = await deliver(trigger.slug, '{"n":1}', { secret: trigger.secret });
    expect(signed.status).to.equal(429);
    expect(signed.headers.get('retry-after')).to.match(/^\d+$/);
    // Refused before the body is read: a declared 2 MiB body with one byte sent is answered at once.
    const started = Date.now();
    const unread = await deliverFrom('127.0.0.5', trigger.slug, '{', { declaredLength: 2 * 1024 * 1024 });
    expect(unread.status).to.equal(429);
    expect(Date.now() - started).to.be.below(2000);
    // Nothing is recorded per refusal; the trigger counts them.
    const [{ n }] = await owner().query(`SELECT count(*) AS n FROM webhook_deliveries WHERE trigger_id = $1`, [
      trigger.id,
    ]);
    expect(Number(n)).to.equal(limit);
    await eventually(async () => (await as(api_key).get(`/v1/triggers/${trigger.id}`)).body.rate_limited.count === 3, {
      what: 'the three refusals to be counted on the trigger',
    });
    const row = (await as(api_key).get(`/v1/triggers/${trigger.id}`)).body;
    expect(row.rate_limited.last_at).to.be.a('string');
    // Another trigger is not affected.
    const other = await newTrigger(api_key);
    expect((await deliver(other.slug, '{}', { secret: other.secret })).status).to.equal(202);
  });

  it('answers 429 past the per-source limit, for known and unknown slugs alike; other sources go on', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key);
    const limit = getStack().config.WEBHOOK_INTAKE_PER_SOURCE;
    const answers = await inParallel(limit, 16, (i) => deliverFrom('127.0.0.6', `probe-${i}-nothing-here`, '{}'));
    expect(answers.every((answer) => answer.status === 404)).to.equal(true);
    const unknown = await deliverFrom('127.0.0.6', 'probe-after-nothing-here', '{}');
    expect(unknown.status).to.equal(429);
    expect(Number(unknown.headers['retry-after'])).to.be.within(1, 60);
    expect((await deliverFrom('127.0.0.6', trigger.slug, '{}')).status).to.equal(429);
    expect((await deliver(trigger.slug, '{}', { secret: trigger.secret })).status).to.equal(202);
  });
});

describe('webhook intake: a captured signed request cannot be replayed (review L-4)', () => {
  it('answers the same t and body under a fresh idempotency key, or none, as the first delivery', async () => {
    const { api_key, workspace_id } = await newTenant();
    const trigger = await newTrigger(api_key);
    const t = nowSeconds();
    const body = '{"action":"opened"}';
    const signature = `t=${t},v1=${sign(trigger.secret, t, body)}`;
    const first = await deliver(trigger.slug, body, { signature, headers: { 'x-service-idempotency-key': 'evt_1' } });
    expect(first.body.execution_id).to.be.a('string');
    const keys: Record<string, string>[] = [
      { 'x-service-idempotency-key': 'evt_1-copy' },
      {},
      { 'x-service-idempotency-key': 'x' },
    ];
    for (const headers of keys) {
      const replay = await deliver(trigger.slug, body, { signature, headers });
      expect(replay.status).to.equal(202);
      expect(replay.body).to.deep.equal(first.body);
    }
    expect(await runsOf(workspace_id)).to.have.length(1);
    const records = await as(api_key).get(`/v1/triggers/${trigger.id}/deliveries`);
    expect(records.body.filter((row: any) => row.duplicate_of === first.body.delivery_id)).to.have.length(3);
    // The sender's next event (another body, or the same body signed at another t) is new.
    expect((await deliver(trigger.slug, '{"action":"closed"}', { secret: trigger.secret })).body.execution_id).to.be.a(
      'string',
    );
    const later = await deliver(trigger.slug, body, { secret: trigger.secret, t: t + 1 });
    expect(later.body.execution_id).to.be.a('string').and.not.equal(first.body.execution_id);
  });

  it('treats a replay of a delivery the filter did not match as its duplicate too', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key, { event_filter: { expression: 'body.go' } });
    const t = nowSeconds();
    const signature = `t=${t},v1=${sign(trigger.secret, t, '{}')}`;
    const first = await deliver(trigger.slug, '{}', { signature });
    const again = await deliver(trigger.slug, '{}', { signature });
    expect(again.body).to.deep.equal(first.body);
    const record = (await as(api_key).get(`/v1/triggers/${trigger.id}/deliveries`)).body[0];
    expect(record).to.include({ duplicate_of: first.body.delivery_id, reason: 'duplicate' });
  });
});

describe('webhook intake: slugs do not leak across workspaces (review L-12)', () => {
  it('gives every trigger a random suffix, so two workspaces asking for one name both get theirs', async () => {
    const a = await newTenant();
    const b = await newTenant();
    const made = [];
    for (const tenant of [a, b]) {
      const created = await as(tenant.api_key).post('/v1/triggers', { slug: 'github', run: playbook });
      expect(created.status).to.equal(201);
      expect(created.body.slug).to.match(/^github-[a-z0-9]{10}$/);
      made.push(created.body);
    }
    expect(made[0].slug).not.to.equal(made[1].slug);
    // The bare name is nobody's.
    expect((await deliver('github', '{}', { secret: made[0].secret })).status).to.equal(404);
    expect((await deliver(made[1].slug, '{}', { secret: made[1].secret })).status).to.equal(202);
  });
});

describe('webhook triggers: changing what dispatches needs runs:write (review M-2)', () => {
  it('refuses enable, filter and redeliver to triggers:manage alone; disabling stays allowed', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key);
    const sent = await deliver(trigger.slug, '{"n":1}', { secret: trigger.secret });
    const scopes = ['triggers:manage', 'billing:read'];
    const manager = as((await as(api_key).post('/v1/auth/me/api-keys', { name: 'manager', scopes })).body.token);
    const base = `/v1/triggers/${trigger.id}`;
    for (const change of [{ enabled: true }, { event_filter: { expression: 'body.n' } }, { event_filter: null }]) {
      const refused = await manager.patch(base, change);
      expect(refused.status, JSON.stringify(change)).to.equal(403);
      expect(JSON.stringify(refused.body)).to.contain('runs:write');
    }
    const redeliver = await manager.post(`${base}/deliveries/${sent.body.delivery_id}/redeliver`);
    expect(redeliver.status).to.equal(403);
    expect((await manager.patch(base, { enabled: false })).status).to.equal(200);
  });

  it('makes the caller of a filter change or a redelivery the identity the runs act as', async () => {
    const tenant = await newTenant();
    const member = await newMember(tenant.workspace_id);
    const trigger = await newTrigger(tenant.api_key);
    const sent = await deliver(trigger.slug, '{"n":1}', { secret: trigger.secret });
    const userOf = async (executionId: string) =>
      (await owner().query(`SELECT user_id FROM run_executions WHERE id = $1`, [executionId]))[0].user_id;
    expect(await userOf(sent.body.execution_id)).to.equal(tenant.user_id);
    const base = `/v1/triggers/${trigger.id}`;
    expect((await as(member.api_key).patch(base, { event_filter: { expression: 'body.n' } })).status).to.equal(200);
    const afterFilter = await deliver(trigger.slug, '{"n":2}', { secret: trigger.secret });
    expect(await userOf(afterFilter.body.execution_id)).to.equal(member.user_id);
    const again = await as(tenant.api_key).post(`${base}/deliveries/${sent.body.delivery_id}/redeliver`);
    expect(again.status).to.equal(202);
    expect(await userOf(again.body.execution_id)).to.equal(tenant.user_id);
    const afterRedeliver = await deliver(trigger.slug, '{"n":3}', { secret: trigger.secret });
    expect(await userOf(afterRedeliver.body.execution_id)).to.equal(tenant.user_id);
  });

  it('limits redelivery per trigger (429 with Retry-After)', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key);
    const sent = await deliver(trigger.slug, '{}', { secret: trigger.secret });
    const path = `/v1/triggers/${trigger.id}/deliveries/${sent.body.delivery_id}/redeliver`;
    const limit = getStack().config.WEBHOOK_REDELIVERIES_PER_TRIGGER;
    for (let i = 0; i < limit; i++) expect((await as(api_key).post(path)).status).to.equal(202);
    const refused = await as(api_key).post(path);
    expect(refused.status).to.equal(429);
    expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
    // Another trigger's budget is its own.
    const other = await newTrigger(api_key);
    const first = await deliver(other.slug, '{}', { secret: other.secret });
    const path2 = `/v1/triggers/${other.id}/deliveries/${first.body.delivery_id}/redeliver`;
    expect((await as(api_key).post(path2)).status).to.equal(202);
  });
});

describe('webhook triggers: the creating credential’s expiry and revocation (review M-4)', () => {
  it('stops dispatching when the JWT expires, and a purged revocation does not bring it back', async () => {
    const { config } = getStack();
    const tenant = await newTenant();
    const jwtFor = async (seconds: number) => {
      const jti = randomUUID();
      const expiresAt = new Date((nowSeconds() + seconds) * 1000);
      const token = await new SignJWT({ wid: tenant.workspace_id })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(tenant.user_id)
        .setIssuer(config.JWT_ISSUER)
        .setAudience(config.JWT_AUDIENCE)
        .setIssuedAt()
        .setJti(jti)
        .setExpirationTime(expiresAt)
        .sign(new TextEncoder().encode(config.JWT_SECRET));
      return { token, jti, expiresAt };
    };
    // Expiry: a trigger made with a JWT that lives 3 s dispatches until then, and never after.
    const short = await jwtFor(3);
    const expiring = await newTrigger(short.token);
    expect((await deliver(expiring.slug, '{"n":1}', { secret: expiring.secret })).body.execution_id).to.be.a('string');
    // Revocation, then purge: another JWT revoked and expired; revoking a third purges its row.
    const revoked = await jwtFor(3);
    const trigger = await newTrigger(revoked.token);
    await owner().transaction((m) => revokeUserToken(m, { jti: revoked.jti, expiresAt: revoked.expiresAt }));
    const whileRevoked = await deliver(trigger.slug, '{"n":1}', { secret: trigger.secret });
    expect(whileRevoked.body).not.to.have.property('execution_id');
    await sleep(Math.max(0, revoked.expiresAt.getTime() - Date.now()) + 1100);
    const unrelated = await jwtFor(600);
    await owner().transaction((m) => revokeUserToken(m, { jti: unrelated.jti, expiresAt: unrelated.expiresAt }));
    const purged = await owner().query(`SELECT 1 FROM revoked_tokens WHERE jti = $1`, [revoked.jti]);
    expect(purged).to.have.length(0);
    for (const [hook, body] of [
      [trigger, '{"n":2}'],
      [expiring, '{"n":2}'],
    ] as const) {
      const sent = await deliver(hook.slug, body, { secret: hook.secret });
      expect(sent.status).to.equal(202);
      expect(sent.body).not.to.have.property('execution_id');
      const record = await as(tenant.api_key).get(`/v1/triggers/${hook.id}/deliveries/${sent.body.delivery_id}`);
      expect(record.body.reason).to.equal('dispatch_refused: credential_revoked');
    }
  });
});
