import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { expect } from 'chai';
import { scheduleId } from '../src/app/schedules';
import { webhookDeliveryRetentionWorkflow } from '../src/triggers/workflow';
import { eventually, sleep } from './helpers/eventually';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { newMember, newTenant } from './helpers/tenants';
import { deliver, newTrigger, nowSeconds, playbook, sign } from './helpers/webhooks';

const MIB2 = 2 * 1024 * 1024;

/** Waits for the start of a second, so a request sent now is answered within the same second. */
async function atSecondStart() {
  const into = Date.now() % 1000;
  if (into > 50) await sleep(1000 - into + 20);
}

const deliveryCount = async (triggerId: string) =>
  Number(
    (
      await getStack().ownerDataSource.query(`SELECT count(*) AS n FROM webhook_deliveries WHERE trigger_id = $1`, [
        triggerId,
      ])
    )[0].n,
  );

/**
 * A request through node:http, for bodies a fetch client would not send as wanted: a declared
 * length above the cap with only part of the body written, or a chunked stream that never ends.
 */
function rawIntake(
  slug: string,
  options: { contentLength?: number; write: Buffer; end: boolean },
): Promise<{ status: number; text: string }> {
  const url = new URL(`${getStack().baseUrl}/v1/triggers/webhook/${slug}`);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { 'content-type': 'application/json' };
    if (options.contentLength !== undefined) headers['content-length'] = options.contentLength;
    const req = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (chunk) => {
        text += chunk;
      });
      res.on('end', () => {
        resolve({ status: res.statusCode!, text });
        req.destroy();
      });
    });
    // The server closes the connection after refusing: a write still under way may fail, which is expected.
    req.on('error', (error) => (error.message.match(/EPIPE|ECONNRESET|socket hang up/) ? undefined : reject(error)));
    req.write(options.write);
    if (options.end) req.end();
  });
}

describe('webhook triggers: management (issue 13)', () => {
  it('creates a trigger whose secret is shown once and is not stored in plaintext', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key, { event_filter: { expression: "body.action == 'opened'" } });
    expect(trigger.secret).to.match(/^whsec_[0-9a-f]{64}$/);
    const read = await as(api_key).get(`/v1/triggers/${trigger.id}`);
    expect(read.status).to.equal(200);
    expect(read.body).to.include({ slug: trigger.slug, enabled: true });
    expect(read.body).not.to.have.property('secret');
    expect(read.body.event_filter).to.deep.equal({ expression: "body.action == 'opened'" });
    const listed = await as(api_key).get('/v1/triggers');
    expect(listed.body.map((row: any) => row.id)).to.deep.equal([trigger.id]);
    const [row] = await getStack().ownerDataSource.query(
      `SELECT secret_sealed, row_to_json(t)::text AS everything FROM webhook_triggers t WHERE id = $1`,
      [trigger.id],
    );
    const hex = trigger.secret.slice('whsec_'.length);
    expect(row.everything).not.to.contain(hex);
    expect(Buffer.from(row.secret_sealed, 'base64').toString('hex')).not.to.contain(hex);
  });

  it('answers a template with tags, a concurrency key and a budget as it was saved', async () => {
    const { api_key } = await newTenant();
    const run = {
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance', input: {} }] },
      tags: ['nightly'],
      concurrency: { key: 'import', limit: 1 },
      budget: { max_steps: 3 },
    };
    const trigger = await newTrigger(api_key, { run });
    const read = await as(api_key).get(`/v1/triggers/${trigger.id}`);
    expect(read.status, read.text).to.equal(200);
    expect(read.body.run).to.deep.include({ tags: ['nightly'], budget: { max_steps: 3 } });
    expect(read.body.run.concurrency).to.include({ key: 'import', limit: 1 });
  });

  it('refuses a bad slug (422), a bad filter or template (422); a name used elsewhere is no conflict', async () => {
    const { api_key } = await newTenant();
    const other = await newTenant();
    const client = as(api_key);
    for (const slug of ['ab', 'Upper-case', '-leading', 'a'.repeat(53), 'has_underscore']) {
      const refused = await client.post('/v1/triggers', { slug, run: playbook });
      expect(refused.status, slug).to.equal(422);
    }
    const taken = await newTrigger(api_key);
    // Review L-12: slugs get a random suffix, so asking for another workspace's name is no conflict.
    const again = await as(other.api_key).post('/v1/triggers', { slug: taken.slug, run: playbook });
    expect(again.status).to.equal(201);
    expect(again.body.slug).to.match(new RegExp(`^${taken.slug}-[a-z0-9]{10}$`));

    const badFilter = await client.post('/v1/triggers', {
      slug: `f-${randomUUID().slice(0, 8)}`,
      run: playbook,
      event_filter: { expression: 'body.[' },
    });
    expect(badFilter.status).to.equal(422);
    expect(badFilter.body.detail[0].loc).to.deep.equal(['body', 'event_filter', 'expression']);

    const badTool = await client.post('/v1/triggers', {
      slug: `t-${randomUUID().slice(0, 8)}`,
      run: { agent: 'playbook', input: { steps: [{ tool: 'no.such_tool' }] } },
    });
    expect(badTool.status).to.equal(422);
    expect(badTool.body.detail[0].loc.slice(0, 2)).to.deep.equal(['body', 'run']);
    const patched = await client.patch(`/v1/triggers/${taken.id}`, { event_filter: { expression: '[[' } });
    expect(patched.status).to.equal(422);
  });

  it('needs the triggers:manage scope', async () => {
    const { api_key } = await newTenant();
    const key = await as(api_key).post('/v1/auth/me/api-keys', { name: 'reader', scopes: ['runs:read'] });
    const listed = await as(key.body.token).get('/v1/triggers');
    expect(listed.status).to.equal(403);
  });

  it('needs runs:write too to create a trigger, change its run or rotate its secret (403)', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key);
    const scopes = ['triggers:manage', 'billing:read'];
    const manager = (await as(api_key).post('/v1/auth/me/api-keys', { name: 'manager', scopes })).body.token;
    const client = as(manager);
    const created = await client.post('/v1/triggers', { slug: `w-${randomUUID().slice(0, 8)}`, run: playbook });
    expect(created.status).to.equal(403);
    expect(JSON.stringify(created.body)).to.contain('runs:write');
    expect((await client.patch(`/v1/triggers/${trigger.id}`, { run: playbook })).status).to.equal(403);
    expect((await client.patch(`/v1/triggers/${trigger.id}`, { rotate_secret: true })).status).to.equal(403);
    // Enabling, disabling and the filter stay with triggers:manage alone.
    expect((await client.patch(`/v1/triggers/${trigger.id}`, { enabled: false })).status).to.equal(200);
  });

  it('makes the caller of a PATCH of run or rotate_secret the identity the runs act as', async () => {
    const owner = await newTenant();
    const member = await newMember(owner.workspace_id);
    const trigger = await newTrigger(owner.api_key);
    let n = 0;
    const runUser = async (secret: string) => {
      // A distinct body each time: the same signed request again would be a duplicate of the first.
      const sent = await deliver(trigger.slug, JSON.stringify({ n: n++ }), { secret });
      expect(sent.status, JSON.stringify(sent.body)).to.equal(202);
      const [row] = await getStack().ownerDataSource.query(`SELECT user_id FROM run_executions WHERE id = $1`, [
        sent.body.execution_id,
      ]);
      return row.user_id as string;
    };
    expect(await runUser(trigger.secret)).to.equal(owner.user_id);
    const rotated = await as(member.api_key).patch(`/v1/triggers/${trigger.id}`, { rotate_secret: true });
    expect(rotated.status).to.equal(200);
    expect(await runUser(rotated.body.secret)).to.equal(member.user_id);
    const rerun = await as(owner.api_key).patch(`/v1/triggers/${trigger.id}`, { run: playbook });
    expect(rerun.status).to.equal(200);
    expect(await runUser(rotated.body.secret)).to.equal(owner.user_id);
    // The template is checked against the caller's scopes: one lacking its tool's scope is refused.
    const narrow = ['triggers:manage', 'runs:write'];
    const key = (await as(member.api_key).post('/v1/auth/me/api-keys', { name: 'narrow', scopes: narrow })).body;
    const refused = await as(key.token).patch(`/v1/triggers/${trigger.id}`, { rotate_secret: true });
    expect(refused.status, JSON.stringify(refused.body)).to.equal(400);
    expect(await runUser(rotated.body.secret)).to.equal(owner.user_id);
  });

  it('refuses to dispatch once the credential the trigger runs as is revoked, and records why', async () => {
    const { api_key } = await newTenant();
    const scopes = ['triggers:manage', 'runs:write', 'billing:read', 'capabilities:read'];
    const key = (await as(api_key).post('/v1/auth/me/api-keys', { name: 'hooks', scopes })).body;
    const trigger = await newTrigger(key.token);
    const before = await deliver(trigger.slug, '{}', { secret: trigger.secret });
    expect(before.body.execution_id).to.be.a('string');
    expect((await as(api_key).delete(`/v1/auth/me/api-keys/${key.id}`)).status).to.equal(200);
    const after = await deliver(trigger.slug, '{"after":true}', { secret: trigger.secret });
    expect(after.status).to.equal(202);
    expect(after.body).not.to.have.property('execution_id');
    const record = await as(api_key).get(`/v1/triggers/${trigger.id}/deliveries/${after.body.delivery_id}`);
    expect(record.body).to.include({ reason: 'dispatch_refused: credential_revoked', execution_id: null });
    // A redelivery dispatches as its caller, who becomes the trigger's identity: a live credential may.
    const again = await as(api_key).post(`/v1/triggers/${trigger.id}/deliveries/${before.body.delivery_id}/redeliver`);
    expect(again.status).to.equal(202);
    const next = await deliver(trigger.slug, '{"next":true}', { secret: trigger.secret });
    expect(next.body.execution_id).to.be.a('string');
  });

  it('deletes a trigger with its records; its slug answers 404 and is free again', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key);
    expect((await deliver(trigger.slug, '{}', { secret: trigger.secret })).status).to.equal(202);
    const removed = await as(api_key).delete(`/v1/triggers/${trigger.id}`);
    expect(removed.status).to.equal(200);
    expect(await deliveryCount(trigger.id)).to.equal(0);
    expect((await deliver(trigger.slug, '{}', { secret: trigger.secret })).status).to.equal(404);
    const reused = await as(api_key).post('/v1/triggers', { slug: trigger.slug, run: playbook });
    expect(reused.status).to.equal(201);
  });
});

describe('webhook triggers: signature (contract 4.6 rules 1, 2, 5)', () => {
  let slug: string;
  let secret: string;
  let triggerId: string;
  let token: string;
  before(async () => {
    token = (await newTenant()).api_key;
    // A false filter: verification is under test, not dispatch.
    const trigger = await newTrigger(token, { event_filter: { expression: 'body.never' } });
    slug = trigger.slug;
    secret = trigger.secret;
    triggerId = trigger.id;
  });

  const refusedAndRecorded = async (response: { status: number; body: any }) => {
    expect(response.status).to.equal(401);
    expect(response.body.reason).to.equal('signature_invalid');
    const record = await as(token).get(`/v1/triggers/${triggerId}/deliveries/${response.body.delivery_id}`);
    expect(record.status).to.equal(200);
    expect(record.body).to.include({ status_code: 401, reason: 'signature_invalid', execution_id: null });
  };

  it('accepts a valid signature over the exact bytes and records headers and body', async () => {
    const body = Buffer.from('{"action": "opened",  "n": 1}');
    const accepted = await deliver(slug, body, { secret });
    expect(accepted.status).to.equal(202);
    expect(accepted.body).to.have.property('delivery_id');
    expect(accepted.body).not.to.have.property('execution_id');
    const record = await as(token).get(`/v1/triggers/${triggerId}/deliveries/${accepted.body.delivery_id}`);
    expect(Buffer.from(record.body.body_base64, 'base64').equals(body)).to.equal(true);
    expect(record.body.body_text).to.equal(body.toString());
    const names = record.body.headers.map(([name]: [string, string]) => name.toLowerCase());
    expect(names).to.include.members(['x-service-signature', 'content-type']);
    expect(record.body).to.include({ status_code: 202, filter_result: 'not_matched' });
  });

  it('refuses a body re-serialised after signing, a flipped byte and an altered t', async () => {
    const original = '{"action": "opened", "n": 1}';
    const t = nowSeconds();
    const signature = `t=${t},v1=${sign(secret, t, original)}`;
    await refusedAndRecorded(await deliver(slug, JSON.stringify(JSON.parse(original)), { signature }));
    const flipped = Buffer.from(original);
    flipped[5]! ^= 1;
    await refusedAndRecorded(await deliver(slug, flipped, { signature }));
    await refusedAndRecorded(
      await deliver(slug, original, { signature: `t=${t + 1},v1=${sign(secret, t, original)}` }),
    );
    expect((await deliver(slug, original, { signature })).status).to.equal(202);
  });

  it('refuses t 301 s in the past or the future and accepts 299 s either way', async () => {
    for (const offset of [-301, 301]) {
      await atSecondStart();
      await refusedAndRecorded(await deliver(slug, '{}', { secret, t: nowSeconds() + offset }));
    }
    for (const offset of [-299, 299]) {
      await atSecondStart();
      expect((await deliver(slug, '{}', { secret, t: nowSeconds() + offset })).status, String(offset)).to.equal(202);
    }
  });

  it('accepts several v1 values when one matches; refuses uppercase hex, no v1, no header, junk', async () => {
    const t = nowSeconds();
    const good = sign(secret, t, '{}');
    const several = `t=${t},v1=${'0'.repeat(64)},v1=abc,v1=${good},v0=zzz`;
    expect((await deliver(slug, '{}', { signature: several })).status).to.equal(202);
    // Decision: the contract writes lowercase hex, so an uppercase digest does not match.
    await refusedAndRecorded(await deliver(slug, '{}', { signature: `t=${t},v1=${good.toUpperCase()}` }));
    await refusedAndRecorded(await deliver(slug, '{}', { signature: `t=${t}` }));
    await refusedAndRecorded(await deliver(slug, '{}', {}));
    await refusedAndRecorded(await deliver(slug, '{}', { signature: `t=${t},t=${t},v1=${good}` }));
    await refusedAndRecorded(await deliver(slug, '{}', { signature: `t=soon,v1=${good}` }));
    await refusedAndRecorded(await deliver(slug, '{}', { signature: `v1=${good}` }));
  });

  it('takes a body of exactly 2 MiB and refuses 2 MiB + 1 with 413 without reading the rest', async () => {
    const exact = Buffer.alloc(MIB2, 'a');
    expect((await deliver(slug, exact, { secret })).status).to.equal(202);
    const before = await deliveryCount(triggerId);

    // Declared too large: answered before a single further byte is sent (the request is never ended).
    const declared = await rawIntake(slug, { contentLength: MIB2 + 1, write: Buffer.from('{'), end: false });
    expect(declared.status).to.equal(413);
    // Streamed without a length: refused as soon as the 2 MiB + 1st byte arrives, the stream still open.
    const streamed = await rawIntake(slug, { write: Buffer.alloc(MIB2 + 1, 'a'), end: false });
    expect(streamed.status).to.equal(413);
    const [row] = await getStack().ownerDataSource.query(
      `SELECT status_code, body FROM webhook_deliveries WHERE trigger_id = $1 ORDER BY received_at DESC LIMIT 1`,
      [triggerId],
    );
    expect(row).to.deep.include({ status_code: 413, body: null });
    expect(await deliveryCount(triggerId)).to.equal(before + 2);
    // An unknown slug with a body too large: still a prompt 404, the unread stream left hanging.
    const unknown = `nope-${randomUUID().slice(0, 8)}`;
    expect((await rawIntake(unknown, { write: Buffer.alloc(MIB2 + 1, 'a'), end: false })).status).to.equal(404);
  });

  it('keeps the previous secret valid for 24 h after a rotation, then refuses it', async () => {
    const trigger = await newTrigger(token);
    const rotated = await as(token).patch(`/v1/triggers/${trigger.id}`, { rotate_secret: true });
    expect(rotated.status).to.equal(200);
    expect(rotated.body.secret)
      .to.match(/^whsec_/)
      .and.not.equal(trigger.secret);
    const expires = Date.parse(rotated.body.previous_secret_expires_at);
    expect(expires - Date.now()).to.be.within(23.9 * 3600_000, 24 * 3600_000 + 60_000);
    expect((await deliver(trigger.slug, '{}', { secret: trigger.secret })).status).to.equal(202);
    expect((await deliver(trigger.slug, '{}', { secret: rotated.body.secret })).status).to.equal(202);
    await getStack().ownerDataSource.query(
      `UPDATE webhook_triggers SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`,
      [trigger.id],
    );
    expect((await deliver(trigger.slug, '{}', { secret: trigger.secret })).status).to.equal(401);
    expect((await deliver(trigger.slug, '{}', { secret: rotated.body.secret })).status).to.equal(202);
  });

  it('reads the raw body on a path in another case too, answering at once instead of hanging', async () => {
    // The router matches paths case-insensitively; the JSON parser must step aside for these as well.
    const post = (path: string, body: string, t = nowSeconds()) =>
      fetch(`${getStack().baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-signature': `t=${t},v1=${sign(secret, t, body)}` },
        body,
        signal: AbortSignal.timeout(10_000),
      });
    const accepted = await post(`/V1/TRIGGERS/Webhook/${slug}`, '{"a": 1}');
    expect(accepted.status).to.equal(202);
    const record = await as(token).get(
      `/v1/triggers/${triggerId}/deliveries/${((await accepted.json()) as { delivery_id: string }).delivery_id}`,
    );
    expect(record.body.body_text).to.equal('{"a": 1}');
    expect((await post('/V1/triggers/webhook/no-such-slug-here', '{}')).status).to.equal(404);
  });

  it('answers 404 for an unknown or disabled slug and records nothing', async () => {
    const unknown = await deliver(`nope-${randomUUID().slice(0, 8)}`, '{}', { secret });
    expect(unknown.status).to.equal(404);
    const trigger = await newTrigger(token);
    const disabled = await as(token).patch(`/v1/triggers/${trigger.id}`, { enabled: false });
    expect(disabled.body.enabled).to.equal(false);
    expect((await deliver(trigger.slug, '{}', { secret: trigger.secret })).status).to.equal(404);
    expect(await deliveryCount(trigger.id)).to.equal(0);
    await as(token).patch(`/v1/triggers/${trigger.id}`, { enabled: true });
    expect((await deliver(trigger.slug, '{}', { secret: trigger.secret })).status).to.equal(202);
  });
});

describe('webhook triggers: filters, dispatch and idempotency (contract 4.6 rules 3, 4)', () => {
  it('dispatches on a match with the event in the input; a false or failing filter dispatches nothing', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key, {
      event_filter: { expression: "body.action == 'opened' && headers.\"x-github-event\" == 'issues'" },
    });
    const body = JSON.stringify({ action: 'opened', issue: { number: 7 } });
    const matched = await deliver(trigger.slug, body, {
      secret: trigger.secret,
      headers: { 'X-GitHub-Event': 'issues' },
    });
    expect(matched.status).to.equal(202);
    expect(matched.body.execution_id).to.be.a('string');
    const run = await as(api_key).get(`/v1/runs/${matched.body.execution_id}`);
    expect(run.body.input.event.body).to.deep.equal({ action: 'opened', issue: { number: 7 } });
    expect(run.body.input.event.headers['x-github-event']).to.equal('issues');
    expect(run.body.input.steps).to.have.length(1);
    await eventually(
      async () => (await as(api_key).get(`/v1/runs/${matched.body.execution_id}`)).body.status === 'SUCCEEDED',
      {
        what: 'the dispatched run to succeed',
        timeoutMs: 30_000,
      },
    );

    const notMatched = await deliver(trigger.slug, JSON.stringify({ action: 'closed' }), {
      secret: trigger.secret,
      headers: { 'X-GitHub-Event': 'issues' },
    });
    expect(notMatched.status).to.equal(202);
    expect(notMatched.body).not.to.have.property('execution_id');
    const record = await as(api_key).get(`/v1/triggers/${trigger.id}/deliveries/${notMatched.body.delivery_id}`);
    expect(record.body).to.include({ filter_result: 'not_matched', execution_id: null });

    const failing = await newTrigger(api_key, { event_filter: { expression: 'abs(body.name)' } });
    const errored = await deliver(failing.slug, JSON.stringify({ name: 'text' }), { secret: failing.secret });
    expect(errored.status).to.equal(202);
    expect(errored.body).not.to.have.property('execution_id');
    const failed = await as(api_key).get(`/v1/triggers/${failing.id}/deliveries/${errored.body.delivery_id}`);
    expect(failed.body.filter_result).to.equal('error');
    expect(failed.body.filter_error).to.be.a('string').and.not.equal('');
  });

  it('parses a form-encoded body for the filter; raw text when the body does not parse', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key, { event_filter: { expression: "body.action == 'opened'" } });
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const matched = await deliver(trigger.slug, 'action=opened&tag=a&tag=b', { secret: trigger.secret, headers: form });
    expect(matched.body.execution_id).to.be.a('string');
    const run = await as(api_key).get(`/v1/runs/${matched.body.execution_id}`);
    expect(run.body.input.event.body).to.deep.equal({ action: 'opened', tag: ['a', 'b'] });
    const closed = await deliver(trigger.slug, 'action=closed', { secret: trigger.secret, headers: form });
    expect(closed.body).not.to.have.property('execution_id');

    const text = await newTrigger(api_key, { event_filter: { expression: "body == 'ping'" } });
    const ping = await deliver(text.slug, 'ping', { secret: text.secret, headers: { 'content-type': 'text/plain' } });
    expect(ping.body.execution_id).to.be.a('string');
  });

  it('answers a duplicate key with the earlier delivery and run, dispatching nothing, and records it', async () => {
    const { api_key, workspace_id } = await newTenant();
    const trigger = await newTrigger(api_key);
    const key = { 'X-Service-Idempotency-Key': 'evt_123' };
    const first = await deliver(trigger.slug, '{"a":1}', { secret: trigger.secret, headers: key });
    expect(first.body.execution_id).to.be.a('string');
    const second = await deliver(trigger.slug, '{"a":1}', { secret: trigger.secret, headers: key });
    expect(second.status).to.equal(202);
    expect(second.body).to.deep.equal(first.body);
    const records = await as(api_key).get(`/v1/triggers/${trigger.id}/deliveries`);
    expect(records.body).to.have.length(2);
    expect(records.body[0]).to.include({ duplicate_of: first.body.delivery_id, status_code: 202 });
    const runs = await getStack().ownerDataSource.query(
      `SELECT idempotency_key FROM run_executions WHERE workspace_id = $1`,
      [workspace_id],
    );
    expect(runs.map((row: any) => row.idempotency_key)).to.deep.equal([`webhook:${trigger.id}:evt_123`]);
  });

  it('still records a delivery whose dispatch fails in the database, with the refusal', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key);
    // Valid JSON that Postgres's jsonb refuses (a NUL character): the run's input cannot be written.
    const body = '{"text":"a\\u0000b"}';
    const sent = await deliver(trigger.slug, body, { secret: trigger.secret });
    expect(sent.status, JSON.stringify(sent.body)).to.equal(202);
    expect(sent.body).not.to.have.property('execution_id');
    const record = await as(api_key).get(`/v1/triggers/${trigger.id}/deliveries/${sent.body.delivery_id}`);
    expect(record.body.reason).to.match(/^dispatch_refused: /);
    expect(record.body.body_text).to.equal(body);
    // The transaction is still usable after the failure: a later delivery dispatches as usual.
    const next = await deliver(trigger.slug, '{}', { secret: trigger.secret });
    expect(next.body.execution_id).to.be.a('string');
  });

  it('refuses a POST /v1/runs key starting with webhook: (422): a trigger’s run keys are its own', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key);
    const taken = await as(api_key).post('/v1/runs', { ...playbook, idempotency_key: `webhook:${trigger.id}:k1` });
    expect(taken.status).to.equal(422);
    expect(taken.body.detail[0].loc).to.deep.equal(['body', 'idempotency_key']);
    const headers = { 'x-service-idempotency-key': 'k1' };
    const sent = await deliver(trigger.slug, '{"n":1}', { secret: trigger.secret, headers });
    const run = await as(api_key).get(`/v1/runs/${sent.body.execution_id}`);
    expect(run.body.input.event.body).to.deep.equal({ n: 1 });
    expect((await as(api_key).post('/v1/runs', { ...playbook, idempotency_key: 'web:hook' })).status).to.equal(202);
  });

  it('gives twenty concurrent requests with one key exactly one execution', async () => {
    const { api_key, workspace_id } = await newTenant();
    const trigger = await newTrigger(api_key);
    const headers = { 'X-Service-Idempotency-Key': 'burst-1' };
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => deliver(trigger.slug, '{"burst":true}', { secret: trigger.secret, headers })),
    );
    expect(answers.map((answer) => answer.status)).to.deep.equal(Array(20).fill(202));
    expect(new Set(answers.map((answer) => answer.body.delivery_id)).size).to.equal(1);
    expect(new Set(answers.map((answer) => answer.body.execution_id)).size).to.equal(1);
    const [{ n }] = await getStack().ownerDataSource.query(
      `SELECT count(*) AS n FROM run_executions WHERE workspace_id = $1`,
      [workspace_id],
    );
    expect(Number(n)).to.equal(1);
    const rows = await getStack().ownerDataSource.query(
      `SELECT count(*) FILTER (WHERE duplicate_of IS NULL) AS originals, count(*) AS total
       FROM webhook_deliveries WHERE trigger_id = $1`,
      [trigger.id],
    );
    expect(rows[0]).to.deep.equal({ originals: '1', total: '20' });
  });

  it('refuses a key longer than 200 characters with 400 and still records it; 200 is fine', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key);
    const long = await deliver(trigger.slug, '{}', {
      secret: trigger.secret,
      headers: { 'X-Service-Idempotency-Key': 'k'.repeat(201) },
    });
    expect(long.status).to.equal(400);
    expect(long.body.reason).to.equal('idempotency_key_invalid');
    const record = await as(api_key).get(`/v1/triggers/${trigger.id}/deliveries/${long.body.delivery_id}`);
    expect(record.body).to.include({ status_code: 400, execution_id: null });
    const fine = await deliver(trigger.slug, '{}', {
      secret: trigger.secret,
      headers: { 'X-Service-Idempotency-Key': 'k'.repeat(200) },
    });
    expect(fine.status).to.equal(202);
  });
});

describe('webhook triggers: the intake’s configuration cache', () => {
  it('applies a PATCH (filter, run, rotation, disable) on the very next delivery after the cache is warm', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key, { event_filter: { expression: "body.action == 'opened'" } });
    let n = 0;
    // A distinct body each time: the same signed request again would be a duplicate of the first.
    const send = (action: string, secret = trigger.secret) =>
      deliver(trigger.slug, JSON.stringify({ action, n: n++ }), { secret });
    // Warm: the first delivery reads the trigger, the next ones are served from the cache.
    for (let i = 0; i < 3; i++) expect((await send('opened')).body.execution_id).to.be.a('string');
    expect((await send('closed')).body).not.to.have.property('execution_id');

    const manage = as(api_key);
    await manage.patch(`/v1/triggers/${trigger.id}`, { event_filter: { expression: "body.action == 'closed'" } });
    expect((await send('opened')).body).not.to.have.property('execution_id');
    expect((await send('closed')).body.execution_id).to.be.a('string');

    const steps = [{ tool: 'billing.credits_balance' }, { tool: 'billing.credits_balance' }];
    await manage.patch(`/v1/triggers/${trigger.id}`, { run: { agent: 'playbook', input: { steps } } });
    const dispatched = await send('closed');
    const run = await manage.get(`/v1/runs/${dispatched.body.execution_id}`);
    expect(run.body.input.steps).to.have.length(2);

    const rotated = await manage.patch(`/v1/triggers/${trigger.id}`, { rotate_secret: true });
    expect((await send('closed', rotated.body.secret)).status).to.equal(202);
    expect((await send('closed', trigger.secret)).status).to.equal(202);
    await getStack().ownerDataSource.query(
      `UPDATE webhook_triggers SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`,
      [trigger.id],
    );
    expect((await send('closed', trigger.secret)).status).to.equal(401);

    await manage.patch(`/v1/triggers/${trigger.id}`, { enabled: false });
    expect((await send('closed', rotated.body.secret)).status).to.equal(404);
    await manage.patch(`/v1/triggers/${trigger.id}`, { enabled: true });
    expect((await send('closed', rotated.body.secret)).body.execution_id).to.be.a('string');

    // Any update of the row counts, not only the API's: the database bumps the revision itself.
    await getStack().ownerDataSource.query(`UPDATE webhook_triggers SET filter_expression = $2 WHERE id = $1`, [
      trigger.id,
      "body.action == 'merged'",
    ]);
    expect((await send('closed', rotated.body.secret)).body).not.to.have.property('execution_id');
    expect((await send('merged', rotated.body.secret)).body.execution_id).to.be.a('string');
  });
});

describe('webhook triggers: delivery records', () => {
  it('lists newest first with limit and cursor, and redelivers an accepted delivery with a fresh key', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key);
    const sent = [];
    for (const n of [1, 2, 3]) sent.push((await deliver(trigger.slug, `{"n":${n}}`, { secret: trigger.secret })).body);
    const refused = await deliver(trigger.slug, '{}', { signature: 't=1,v1=00' });
    const client = as(api_key);
    const page1 = await client.get(`/v1/triggers/${trigger.id}/deliveries?limit=2`);
    expect(page1.body.map((row: any) => row.delivery_id)).to.deep.equal([
      refused.body.delivery_id,
      sent[2].delivery_id,
    ]);
    const page2 = await client.get(`/v1/triggers/${trigger.id}/deliveries?limit=2&cursor=${sent[2].delivery_id}`);
    expect(page2.body.map((row: any) => row.delivery_id)).to.deep.equal([sent[1].delivery_id, sent[0].delivery_id]);

    const again = await client.post(`/v1/triggers/${trigger.id}/deliveries/${sent[0].delivery_id}/redeliver`);
    expect(again.status).to.equal(202);
    expect(again.body.execution_id).to.be.a('string').and.not.equal(sent[0].execution_id);
    const run = await client.get(`/v1/runs/${again.body.execution_id}`);
    expect(run.body.input.event.body).to.deep.equal({ n: 1 });
    const record = await client.get(`/v1/triggers/${trigger.id}/deliveries/${again.body.delivery_id}`);
    expect(record.body).to.include({ redelivery_of: sent[0].delivery_id, execution_id: again.body.execution_id });

    const notVerified = await client.post(
      `/v1/triggers/${trigger.id}/deliveries/${refused.body.delivery_id}/redeliver`,
    );
    expect(notVerified.status).to.equal(409);
  });

  it('deletes records older than 30 days with the daily retention schedule, in batches', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key);
    const ids = [];
    for (let n = 0; n < 3; n += 1)
      ids.push((await deliver(trigger.slug, `{"n":${n}}`, { secret: trigger.secret })).body.delivery_id);
    const owner = getStack().ownerDataSource;
    await owner.query(`UPDATE webhook_deliveries SET received_at = now() - interval '31 days' WHERE id = ANY($1)`, [
      ids.slice(0, 2),
    ]);
    const { config, runtime } = getStack();
    const schedule = await runtime.temporal.client.schedule
      .getHandle(scheduleId(config.TEMPORAL_TASK_QUEUE, { name: 'webhook-delivery-retention' }))
      .describe();
    expect(schedule.action).to.include({ workflowType: 'webhookDeliveryRetentionWorkflow' });
    const handle = await runtime.temporal.workflows.start(webhookDeliveryRetentionWorkflow, { batchSize: 1 });
    expect((await handle.result()).deleted).to.be.at.least(2);
    const left = await owner.query(`SELECT id FROM webhook_deliveries WHERE trigger_id = $1`, [trigger.id]);
    expect(left.map((row: any) => row.id)).to.deep.equal([ids[2]]);
  });

  it('purges an original whose duplicates and redeliveries stay, and later sweeps still work', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key);
    const headers = { 'x-service-idempotency-key': `k-${randomUUID()}` };
    const original = await deliver(trigger.slug, '{}', { secret: trigger.secret, headers });
    const duplicate = await deliver(trigger.slug, '{}', { secret: trigger.secret, headers });
    expect(duplicate.body.delivery_id).to.equal(original.body.delivery_id);
    const client = as(api_key);
    const redeliver = () => client.post(`/v1/triggers/${trigger.id}/deliveries/${original.body.delivery_id}/redeliver`);
    const redeliveries = [(await redeliver()).body.delivery_id, (await redeliver()).body.delivery_id];
    const owner = getStack().ownerDataSource;
    await owner.query(`UPDATE webhook_deliveries SET received_at = now() - interval '31 days' WHERE id = $1`, [
      original.body.delivery_id,
    ]);
    const sweep = async () =>
      (await getStack().runtime.temporal.workflows.start(webhookDeliveryRetentionWorkflow, { batchSize: 10 })).result();
    expect((await sweep()).deleted).to.be.at.least(1);
    const left = await owner.query(
      `SELECT id, duplicate_of, redelivery_of FROM webhook_deliveries WHERE trigger_id = $1`,
      [trigger.id],
    );
    expect(left).to.have.length(3);
    // A purged original leaves its duplicate and redeliveries pointing at an id that is gone.
    for (const row of left) expect(row.duplicate_of ?? row.redelivery_of).to.equal(original.body.delivery_id);
    expect(left.map((row: any) => row.id)).to.include.members(redeliveries);
    await owner.query(`UPDATE webhook_deliveries SET received_at = now() - interval '31 days' WHERE trigger_id = $1`, [
      trigger.id,
    ]);
    await sweep();
    expect(await deliveryCount(trigger.id)).to.equal(0);
  });
});

describe('webhook triggers: isolation', () => {
  it('hides another workspace’s triggers and deliveries, over HTTP and to the app role itself', async () => {
    const a = await newTenant();
    const b = await newTenant();
    const trigger = await newTrigger(a.api_key);
    const accepted = await deliver(trigger.slug, '{}', { secret: trigger.secret });
    const base = `/v1/triggers/${trigger.id}`;
    const attacker = as(b.api_key);
    expect((await attacker.get(base)).status).to.equal(404);
    expect((await attacker.patch(base, { enabled: false })).status).to.equal(404);
    expect((await attacker.get(`${base}/deliveries`)).status).to.equal(404);
    expect((await attacker.get(`${base}/deliveries/${accepted.body.delivery_id}`)).status).to.equal(404);
    expect((await attacker.post(`${base}/deliveries/${accepted.body.delivery_id}/redeliver`)).status).to.equal(404);
    expect((await attacker.delete(base)).status).to.equal(404);
    expect((await attacker.get('/v1/triggers')).body).to.deep.equal([]);

    // The app role (what the API connects as), scoped to B, unscoped, or through the definer function.
    const { runtime } = getStack();
    const asB = await runtime.uow({ workspaceId: b.workspace_id }, async (m) => ({
      triggers: await m.query(`SELECT * FROM webhook_triggers`),
      deliveries: await m.query(`SELECT * FROM webhook_deliveries`),
    }));
    expect(asB).to.deep.equal({ triggers: [], deliveries: [] });
    const unscoped = await runtime.uow({}, async (m) => ({
      triggers: await m.query(`SELECT * FROM webhook_triggers WHERE id = $1`, [trigger.id]),
      deliveries: await m.query(`SELECT * FROM webhook_deliveries WHERE trigger_id = $1`, [trigger.id]),
    }));
    expect(unscoped).to.deep.equal({ triggers: [], deliveries: [] });
    const [resolved] = await runtime.uow({}, (m) =>
      m.query(`SELECT * FROM weft_webhook_trigger_for_slug($1)`, [trigger.slug]),
    );
    expect(Object.keys(resolved).sort()).to.deep.equal([
      'previous_secret_sealed',
      'revision',
      'secret_sealed',
      'signature_scheme',
      'trigger_id',
      'workspace_id',
    ]);
    // Writing into A's trigger from B's scope is refused by the policy.
    let refused = false;
    await runtime
      .uow({ workspaceId: b.workspace_id }, (m) =>
        m.query(
          `INSERT INTO webhook_deliveries (workspace_id, trigger_id, headers, status_code) VALUES ($1, $2, '[]', 202)`,
          [a.workspace_id, trigger.id],
        ),
      )
      .catch(() => {
        refused = true;
      });
    expect(refused).to.equal(true);
  });
});
