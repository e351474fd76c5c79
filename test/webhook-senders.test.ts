import { execFile } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { LIMITS } from '../src/rules/limits';
import { webhookDeliveryRetentionWorkflow } from '../src/triggers/workflow';
import { as, request } from './helpers/http';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';
import { newTrigger, nowSeconds } from './helpers/webhooks';

// Issue 28: real senders' signatures, made by each provider's own library (Slack has none: its
// documented algorithm), against the real intake over HTTP.

const post = (slug: string, body: string, headers: Record<string, string>) =>
  request('POST', `/v1/triggers/webhook/${slug}`, {
    rawBody: body,
    headers: { 'content-type': 'application/json', ...headers },
  });

const githubSign = async (secret: string, body: string) =>
  (await import('@octokit/webhooks-methods')).sign(secret, body);
const stripeHeader = (secret: string, body: string, timestamp = nowSeconds()) =>
  Stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp });
/** Slack's documented algorithm: `v0=` + HMAC-SHA256 hex of `v0:<timestamp>:<body>` under the signing secret. */
const slackHeaders = (secret: string, body: string, t = nowSeconds()) => ({
  'x-slack-request-timestamp': String(t),
  'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${t}:${body}`).digest('hex')}`,
});
const standardHeaders = (secret: string, body: string, id: string, t = nowSeconds()) => ({
  'webhook-id': id,
  'webhook-timestamp': String(t),
  'webhook-signature': new Webhook(secret).sign(id, new Date(t * 1000), body),
});

/** A secret of the right shape for every scheme (Standard Webhooks' library refuses anything but base64). */
const otherSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

interface Sender {
  scheme: string;
  /** Signed headers for `body` under `secret` at `t`; `id` is the delivery id where the scheme sends it. */
  sign(secret: string, body: string, id: string, t: number): Promise<Record<string, string>>;
  /** The body of delivery `id` (Stripe's id is in its event). */
  body(id: string): string;
  stale: boolean;
}

const SENDERS: Sender[] = [
  {
    scheme: 'github',
    sign: async (secret, body, id) => ({
      'x-hub-signature-256': await githubSign(secret, body),
      'x-github-delivery': id,
      'x-github-event': 'issues',
    }),
    body: () => JSON.stringify({ action: 'opened', issue: { number: 7 } }),
    stale: false,
  },
  {
    scheme: 'stripe',
    sign: async (secret, body, _id, t) => ({ 'stripe-signature': stripeHeader(secret, body, t) }),
    body: (id) => JSON.stringify({ id: `evt_${id}`, object: 'event', type: 'invoice.paid' }),
    stale: true,
  },
  {
    scheme: 'slack',
    sign: async (secret, body, _id, t) => slackHeaders(secret, body, t),
    body: (id) => JSON.stringify({ type: 'event_callback', event_id: `Ev${id}`, event: { type: 'app_mention' } }),
    stale: true,
  },
  {
    scheme: 'standard',
    sign: async (secret, body, id, t) => standardHeaders(secret, body, id, t),
    body: () => JSON.stringify({ type: 'user.created', data: { id: 'u_1' } }),
    stale: true,
  },
];

describe('webhook senders: GitHub, Stripe, Slack and Standard Webhooks on the intake (issue 28)', () => {
  it('keeps weft as the default, shows each trigger its scheme; a standard secret is whsec_ base64', async () => {
    const { api_key } = await newTenant();
    const plain = await newTrigger(api_key);
    const read = await as(api_key).get(`/v1/triggers/${plain.id}`);
    expect(read.body.signature).to.deep.equal({ scheme: 'weft' });
    const standard = await newTrigger(api_key, { signature: { scheme: 'standard' } });
    expect(standard.secret).to.match(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(standard.secret.slice(6), 'base64')).to.have.length(32);
    const refused = await as(api_key).post('/v1/triggers', {
      slug: 'bad-secret',
      run: { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance' }] } },
      signature: { scheme: 'standard', secret: 'not-a-whsec-secret-at-all' },
    });
    expect(refused.status).to.equal(422);
    expect(refused.body.detail[0].loc).to.deep.equal(['body', 'signature', 'secret']);
    const unknown = await as(api_key).patch(`/v1/triggers/${plain.id}`, { signature: { scheme: 'svix' } });
    expect(unknown.status).to.equal(422);
  });

  for (const sender of SENDERS) {
    describe(`${sender.scheme}`, () => {
      it('accepts a delivery signed by the sender, refuses a wrong secret (401), dedupes by delivery id', async () => {
        const { api_key } = await newTenant();
        const trigger = await newTrigger(api_key, { signature: { scheme: sender.scheme } });
        const id = randomUUID();
        const body = sender.body(id);
        const first = await post(trigger.slug, body, await sender.sign(trigger.secret, body, id, nowSeconds()));
        expect(first.status, JSON.stringify(first.body)).to.equal(202);
        expect(first.body.execution_id).to.be.a('string');
        // The sender's retry: the same delivery id, signed again a little later (a new timestamp).
        const retry = await post(trigger.slug, body, await sender.sign(trigger.secret, body, id, nowSeconds() + 2));
        expect(retry.status, JSON.stringify(retry.body)).to.equal(202);
        expect(retry.body).to.deep.equal(first.body);
        const wrong = await post(trigger.slug, body, await sender.sign(otherSecret(), body, id, nowSeconds()));
        expect(wrong.status).to.equal(401);
        expect(wrong.body.reason).to.equal('signature_invalid');
        // Weft's own header does not stand in for the sender's.
        const weftOnly = await post(trigger.slug, body, {
          'x-service-signature': `t=${nowSeconds()},v1=${'0'.repeat(64)}`,
        });
        expect(weftOnly.status).to.equal(401);
        const list = await as(api_key).get(`/v1/triggers/${trigger.id}/deliveries`);
        expect(list.body.map((d: { status_code: number }) => d.status_code)).to.deep.equal([401, 401, 202, 202]);
        expect(list.body[2].duplicate_of).to.equal(first.body.delivery_id);
      });

      if (sender.stale) {
        it('refuses a stale timestamp (401)', async () => {
          const { api_key } = await newTenant();
          const trigger = await newTrigger(api_key, { signature: { scheme: sender.scheme } });
          const id = randomUUID();
          const body = sender.body(id);
          const stale = await post(trigger.slug, body, await sender.sign(trigger.secret, body, id, nowSeconds() - 600));
          expect(stale.status).to.equal(401);
        });
      }
    });
  }

  it('github: the previous secret verifies in the grace; a replay is a duplicate; a patch switches', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key, { signature: { scheme: 'github' } });
    const rotated = await as(api_key).patch(`/v1/triggers/${trigger.id}`, { rotate_secret: true });
    expect(rotated.status).to.equal(200);
    for (const [n, secret] of [trigger.secret, rotated.body.secret].entries()) {
      const body = JSON.stringify({ zen: 'Keep it logically awesome.', n });
      const headers = { 'x-hub-signature-256': await githubSign(secret, body), 'x-github-delivery': randomUUID() };
      expect((await post(trigger.slug, body, headers)).status).to.equal(202);
    }
    // A captured request replayed under a fresh delivery id (GitHub signs neither a time nor that
    // header): the body is the signed request, so it answers as the first delivery.
    const body = JSON.stringify({ action: 'closed', issue: { number: 8 } });
    const captured = { 'x-hub-signature-256': await githubSign(rotated.body.secret, body) };
    const first = await post(trigger.slug, body, { ...captured, 'x-github-delivery': randomUUID() });
    expect(first.body.execution_id).to.be.a('string');
    const replayed = await post(trigger.slug, body, { ...captured, 'x-github-delivery': randomUUID() });
    expect(replayed.status).to.equal(202);
    expect(replayed.body).to.deep.equal(first.body);
    const list = await as(api_key).get(`/v1/triggers/${trigger.id}/deliveries`);
    expect(list.body.map((d: { duplicate_of: string | null }) => d.duplicate_of)).to.deep.equal([
      first.body.delivery_id,
      null,
      null,
      null,
    ]);
    // Stripe shows its own endpoint secret: the trigger takes it.
    const stripeSecret = `whsec_${randomUUID().replaceAll('-', '')}`;
    const switched = await as(api_key).patch(`/v1/triggers/${trigger.id}`, {
      signature: { scheme: 'stripe', secret: stripeSecret },
    });
    expect(switched.status, JSON.stringify(switched.body)).to.equal(200);
    expect(switched.body.signature).to.deep.equal({ scheme: 'stripe' });
    const event = JSON.stringify({ id: `evt_${randomUUID()}`, type: 'charge.succeeded' });
    expect(
      (await post(trigger.slug, event, { 'stripe-signature': stripeHeader(stripeSecret, event) })).status,
    ).to.equal(202);
  });

  it('github: a captured delivery stays a duplicate past retention while its secret verifies (NL-5)', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key, { signature: { scheme: 'github' } });
    const body = JSON.stringify({ action: 'opened', pull_request: { number: randomUUID() } });
    const captured = { 'x-hub-signature-256': await githubSign(trigger.secret, body) };
    const first = await post(trigger.slug, body, { ...captured, 'x-github-delivery': randomUUID() });
    expect(first.body.execution_id).to.be.a('string');
    const { ownerDataSource: owner, runtime } = getStack();
    const sweep = async () =>
      (await runtime.temporal.workflows.start(webhookDeliveryRetentionWorkflow, { batchSize: 10 })).result();
    const rowOf = async (id: string) =>
      (await owner.query(`SELECT body, headers, body_sha256 FROM webhook_deliveries WHERE id = $1`, [id]))[0];

    // The review's reproduction: past retention the original was purged, and the same request dispatched again.
    await owner.query(
      `UPDATE webhook_deliveries SET received_at = now() - make_interval(days => $2 + 1) WHERE trigger_id = $1`,
      [trigger.id, LIMITS.webhook.retentionDays],
    );
    await sweep();
    // Its body and headers are gone with the retention; its hash stays, and answers the replay.
    expect(await rowOf(first.body.delivery_id)).to.deep.include({ body: null, headers: [] });
    const replayed = await post(trigger.slug, body, { ...captured, 'x-github-delivery': randomUUID() });
    expect(replayed.status).to.equal(202);
    expect(replayed.body).to.deep.equal(first.body);
    const redeliver = `/v1/triggers/${trigger.id}/deliveries/${first.body.delivery_id}/redeliver`;
    const refused = await as(api_key).post(redeliver);
    expect(refused.status).to.equal(409);
    expect(JSON.stringify(refused.body)).to.match(/body is gone/);

    // Once a rotation's grace is over the old secret verifies nothing, and the record may go.
    const rotated = await as(api_key).patch(`/v1/triggers/${trigger.id}`, { rotate_secret: true });
    expect(rotated.status).to.equal(200);
    await sweep();
    expect(await rowOf(first.body.delivery_id), 'kept during the grace').to.not.equal(undefined);
    await owner.query(
      `UPDATE webhook_triggers SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`,
      [trigger.id],
    );
    await sweep();
    expect(await rowOf(first.body.delivery_id)).to.equal(undefined);
    const stale = await post(trigger.slug, body, { ...captured, 'x-github-delivery': randomUUID() });
    expect(stale.status).to.equal(401);
  });

  it('standard: the signed webhook-id names the message: two ids of one body and second are two runs', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key, { signature: { scheme: 'standard' } });
    // Two messages that happen to carry the same payload in the same second (say, two identical events).
    const body = JSON.stringify({ type: 'invoice.paid', data: { amount: 100 } });
    const t = nowSeconds();
    const [a, b] = [`msg_${randomUUID()}`, `msg_${randomUUID()}`];
    const first = await post(trigger.slug, body, standardHeaders(trigger.secret, body, a, t));
    const second = await post(trigger.slug, body, standardHeaders(trigger.secret, body, b, t));
    expect(first.status, JSON.stringify(first.body)).to.equal(202);
    expect(second.status, JSON.stringify(second.body)).to.equal(202);
    expect(second.body.delivery_id).to.not.equal(first.body.delivery_id);
    expect(second.body.execution_id).to.be.a('string').and.not.equal(first.body.execution_id);
    // The same webhook-id again (a retry, or a captured request replayed) is still the first message.
    const repeat = await post(trigger.slug, body, standardHeaders(trigger.secret, body, a, t));
    expect(repeat.status).to.equal(202);
    expect(repeat.body).to.deep.equal(first.body);
    // A replay cannot rename the message: the id is signed, so another id under the old signature is 401.
    const renamed = { ...standardHeaders(trigger.secret, body, a, t), 'webhook-id': `msg_${randomUUID()}` };
    expect((await post(trigger.slug, body, renamed)).status).to.equal(401);
    const list = await as(api_key).get(`/v1/triggers/${trigger.id}/deliveries`);
    expect(list.body.map((d: { duplicate_of: string | null }) => d.duplicate_of)).to.deep.equal([
      null,
      first.body.delivery_id,
      null,
      null,
    ]);
  });

  it('slack: answers a verified url_verification with its challenge, records it, dispatches nothing', async () => {
    const { api_key } = await newTenant();
    const trigger = await newTrigger(api_key, { signature: { scheme: 'slack' } });
    const body = JSON.stringify({
      token: 'x',
      challenge: 'c-3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
      type: 'url_verification',
    });
    const answered = await post(trigger.slug, body, slackHeaders(trigger.secret, body));
    expect(answered.status).to.equal(200);
    expect(answered.body).to.deep.equal({ challenge: 'c-3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
    const unsigned = await post(trigger.slug, body, slackHeaders(otherSecret(), body));
    expect(unsigned.status).to.equal(401);
    expect(unsigned.body).not.to.have.property('challenge');
    const list = await as(api_key).get(`/v1/triggers/${trigger.id}/deliveries`);
    expect(list.body.map((d: { status_code: number; reason: string }) => [d.status_code, d.reason])).to.deep.equal([
      [401, 'signature_invalid'],
      [200, 'url_verification'],
    ]);
    expect(list.body[1].execution_id).to.equal(null);
  });

  it('weft triggers send signs and sends a test delivery for each scheme', async function () {
    this.timeout(60_000);
    const { api_key } = await newTenant();
    const dir = await mkdtemp(path.join(os.tmpdir(), 'weft-send-'));
    const file = path.join(dir, 'body.json');
    await writeFile(file, JSON.stringify({ id: `evt_${randomUUID()}`, hello: 'world' }));
    const root = path.resolve(__dirname, '..');
    for (const scheme of ['weft', 'github', 'standard']) {
      const trigger = await newTrigger(api_key, { signature: { scheme } });
      const args = ['src/cli/main.ts', 'triggers', 'send', trigger.slug, '--scheme', scheme, '--body', file];
      const { stdout } = await promisify(execFile)(
        path.join(root, 'node_modules/.bin/tsx'),
        [...args, '--secret', trigger.secret, '--base-url', getStack().baseUrl],
        { cwd: root, env: process.env },
      );
      const sent = JSON.parse(stdout.trim());
      expect(sent.status, stdout).to.equal(202);
      expect(sent.response.execution_id).to.be.a('string');
    }
  });
});
