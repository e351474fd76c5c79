import { EventEmitter } from 'node:events';
import type { PassThrough } from 'node:stream';
import { expect } from 'chai';
import type { Context } from 'koa';
import { createEventStreams } from '../src/platform/api/sse';
import type { Principal } from '../src/platform/auth/principal';
import { eventually } from './helpers/eventually';
import { openSse } from './helpers/sse';
import { bootStack, getStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';

// Issue 43 item 3 (review NM-2: one key held 150 streams open and slowed every workspace).
describe('event streams are shared fairly (issue 43 item 3)', () => {
  let booted: Awaited<ReturnType<typeof bootStack>>;
  before(async function () {
    this.timeout(60_000);
    booted = await bootStack({ STREAM_MAX_PER_CREDENTIAL: '2', STREAM_MAX_PER_WORKSPACE: '3' });
  });
  after(async function () {
    this.timeout(60_000);
    await booted?.stop();
  });

  const open = (path: string, token: string) => openSse(path, token, { baseUrl: booted.stack.baseUrl });

  it('a credential past its open streams is 429 with Retry-After; a closed one frees its place', async () => {
    const tenant = await newTenant(10);
    const first = await open('/v1/runs/events', tenant.api_key);
    const second = await open('/v1/runs/events', tenant.api_key);
    expect([first.status, second.status]).to.deep.equal([200, 200]);
    const third = await open('/v1/runs/events', tenant.api_key);
    expect(third.status).to.equal(429);
    expect(third.json.detail).to.include({ error: 'too_many_streams', per: 'credential', limit: 2 });

    // The workspace's other credential still has a place, up to the workspace's limit.
    const other = await open('/v1/runs/events', tenant.user_jwt);
    expect(other.status).to.equal(200);
    const beyond = await open('/v1/runs/events', tenant.user_jwt);
    expect(beyond.status).to.equal(429);
    expect(beyond.json.detail).to.include({ per: 'workspace', limit: 3 });

    // Another workspace is not held back by this one's streams.
    const neighbour = await newTenant(10);
    const theirs = await open('/v1/runs/events', neighbour.api_key);
    expect(theirs.status).to.equal(200);

    first.close();
    const again = await eventually(
      async () => {
        const stream = await open('/v1/runs/events', tenant.api_key);
        return stream.status === 200 ? stream : undefined;
      },
      { what: 'the closed stream’s place freed' },
    );
    for (const stream of [second, other, theirs, again]) stream.close();
  });

  it('a prompt stream refused for its place claims and charges nothing', async () => {
    const tenant = await newTenant(10);
    const held = [await open('/v1/runs/events', tenant.api_key), await open('/v1/runs/events', tenant.api_key)];
    const before = await creditBalance(tenant.tenant_id);
    const response = await fetch(`${booted.stack.baseUrl}/v1/ontology/prompt/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Who is Ada Lovelace?' }),
    });
    expect(response.status).to.equal(429);
    expect(response.headers.get('retry-after')).to.equal('5');
    expect(((await response.json()) as { detail: { error: string } }).detail.error).to.equal('too_many_streams');
    expect(await creditBalance(tenant.tenant_id)).to.equal(before);
    for (const stream of held) stream.close();
  });
});

describe('an event stream whose client does not read is cut off, not buffered', () => {
  const principal = {
    workspaceId: '00000000-0000-4000-8000-000000000001',
    credential: { kind: 'api_key', id: '00000000-0000-4000-8000-000000000002' },
  } as unknown as Principal;
  const streams = () =>
    createEventStreams({
      read: getStack().runtime.read,
      logger: getStack().runtime.logger,
      recheckMs: 60_000,
      maxLifetimeMs: 60_000,
      maxOpen: { credential: 4, workspace: 4 },
      maxBufferedBytes: 64 * 1024,
    });
  const chunk = `data: ${'x'.repeat(1000)}\n\n`;

  it('ends the stream once more than the allowed bytes wait unread, and frees its place', () => {
    const events = streams();
    let ended = false;
    const stream = events.create(principal, { onEnd: () => (ended = true) });
    for (let i = 0; i < 200 && !stream.ended; i++) stream.write(chunk);
    expect(stream.ended).to.equal(true);
    expect(ended).to.equal(true);
    // Its place is free again: four more fit under the credential's limit of four.
    for (let i = 0; i < 4; i++) events.create(principal);
    expect(() => events.create(principal)).to.throw('too_many_streams');
  });

  it('a client that reads keeps its stream, however much it is sent', async () => {
    const events = streams();
    const stream = events.create(principal);
    // The response as Koa would hold it: respond() hands it the stream's body, which this client reads.
    const ctx = { res: new EventEmitter(), status: 0, body: undefined as PassThrough | undefined, set() {} };
    stream.respond(ctx as unknown as Context);
    let received = 0;
    ctx.body!.on('data', (data: Buffer) => {
      received += data.length;
    });
    for (let i = 0; i < 400; i++) {
      stream.write(chunk);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    expect(stream.ended).to.equal(false);
    expect(received).to.be.greaterThan(400 * chunk.length);
    stream.end();
  });
});
