import { execFileSync } from 'node:child_process';
import { expect } from 'chai';
import { Client } from 'pg';
import { createWeftClient } from '../src/client';
import { loadConfig, withTestDatabase } from '../src/platform/config';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import type { Stack } from './helpers/stack';
import { bootStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

// Issue 44 item 4: the read routes read from a real streaming standby (scripts/standby.sh), the
// caller's own writes stay visible (Weft-Read-After), and RLS holds there as on the primary.
// The standby's replay is paused to tell its answers from the primary's: paused, it cannot see
// anything written since, so what a read answers shows where it was served.

const STANDBY_PORT = Number(process.env.WEFT_STANDBY_PORT ?? 5433);

describe('reads from a standby (issue 44 item 4)', function () {
  this.timeout(120_000);
  let variant: { stack: Stack; stop: () => Promise<void> };
  let superuser: Client;
  let api: ReturnType<typeof as>;
  let attacker: ReturnType<typeof as>;
  let bearer: string;

  const standbyUrl = (primary: string) => {
    const url = new URL(primary);
    url.port = String(STANDBY_PORT);
    return url.toString();
  };
  const standbySuperuser = async () => {
    const client = new Client({ host: '127.0.0.1', port: STANDBY_PORT, user: 'postgres', database: 'postgres' });
    await client.connect();
    return client;
  };
  const pauseReplay = () => superuser.query('SELECT pg_wal_replay_pause()');
  const resumeReplay = () => superuser.query('SELECT pg_wal_replay_resume()');

  before(async () => {
    execFileSync('bash', ['scripts/standby.sh', 'up'], { stdio: 'inherit' });
    superuser = await standbySuperuser();
    // A run stopped halfway may have left the replay paused.
    await resumeReplay();
    const replica = standbyUrl(loadConfig(withTestDatabase(process.env)).DATABASE_URL);
    variant = await bootStack({ DATABASE_REPLICA_URL: replica });
    expect(variant.stack.runtime.standby, 'the standby is connected').to.not.equal(undefined);
    const owner = await newTenant();
    const other = await newTenant();
    bearer = `Bearer ${owner.api_key}`;
    api = as(owner.api_key, variant.stack.baseUrl);
    attacker = as(other.api_key, variant.stack.baseUrl);
  });
  afterEach(async () => {
    await resumeReplay();
  });
  after(async () => {
    await resumeReplay().catch(() => {});
    await superuser?.end();
    await variant?.stop();
  });

  const readAfter = (path: string, lsn: string) =>
    fetch(`${variant.stack.baseUrl}${path}`, {
      headers: { authorization: bearer, 'weft-read-after': lsn },
    });

  it('serves a read route from the standby, and the caller’s own write from the primary', async () => {
    await pauseReplay();
    const created = await api.post('/v1/ontology/nodes', { type: 'person', name: 'Ada Standby' });
    expect(created.status, created.text).to.equal(201);
    const lsn = created.headers.get('weft-read-after');
    expect(lsn, 'a write answers its WAL position').to.match(/^[0-9A-F]+\/[0-9A-F]+$/);

    // The standby has not replayed the write: without the position, the read is its answer.
    const stale = await api.get(`/v1/ontology/nodes/${created.body.id}`);
    expect(stale.status, 'read from the paused standby').to.equal(404);
    // With it, the read goes where the write can be seen.
    const own = await readAfter(`/v1/ontology/nodes/${created.body.id}`, lsn!);
    expect(own.status, 'read-your-writes').to.equal(200);
    expect(((await own.json()) as { name: string }).name).to.equal('Ada Standby');

    await resumeReplay();
    await eventually(async () => (await api.get(`/v1/ontology/nodes/${created.body.id}`)).status === 200, {
      what: 'the standby to replay the write',
    });
  });

  /** The API's `weft_db_standby_reads_total` by outcome. */
  const standbyReadCounts = async () => {
    const text = await (await fetch(`${variant.stack.baseUrl}/metrics`)).text();
    const count = (outcome: string) =>
      Number(new RegExp(`^weft_db_standby_reads_total\\{outcome="${outcome}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
    return { standby: count('standby'), behind: count('behind'), failed: count('failed'), resting: count('resting') };
  };

  it('counts in GET /metrics where the reads were served: the standby, or the primary for the own write', async () => {
    const served = standbyReadCounts;
    await pauseReplay();
    const created = await api.post('/v1/ontology/nodes', { type: 'person', name: 'Counted Standby' });
    const before = await served();
    expect((await api.get(`/v1/ontology/nodes/${created.body.id}`)).status, 'the paused standby').to.equal(404);
    const afterStale = await served();
    expect(afterStale.standby, 'served by the standby').to.be.greaterThan(before.standby);
    expect(afterStale.behind).to.equal(before.behind);
    const own = await readAfter(`/v1/ontology/nodes/${created.body.id}`, created.headers.get('weft-read-after')!);
    expect(own.status).to.equal(200);
    const afterOwn = await served();
    expect(afterOwn.behind, 'sent to the primary: the standby is behind the write').to.be.greaterThan(before.behind);
    expect(afterOwn.standby).to.equal(afterStale.standby);
  });

  it('serves a run’s view (a snapshot) from the standby, and the dispatcher’s own from the primary', async () => {
    await pauseReplay();
    const dispatched = await api.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance' }] },
    });
    expect(dispatched.status, dispatched.text).to.equal(202);
    const path = `/v1/runs/${dispatched.body.execution_id}`;
    expect((await api.get(path)).status, 'read from the paused standby').to.equal(404);
    const own = await readAfter(path, dispatched.headers.get('weft-read-after')!);
    expect(own.status, 'read-your-writes').to.equal(200);
  });

  it('gives the Weft client read-your-writes by itself', async () => {
    const weft = createWeftClient({ baseUrl: variant.stack.baseUrl, token: bearer.slice('Bearer '.length) });
    await pauseReplay();
    const { data: node } = await weft.POST('/v1/ontology/nodes', { body: { type: 'person', name: 'Client Reads' } });
    const { data, response } = await weft.GET('/v1/ontology/nodes/{node_id}', {
      params: { path: { node_id: node!.id } },
    });
    expect(response.status).to.equal(200);
    expect(data?.name).to.equal('Client Reads');
  });

  it('keeps writes, and a read in the same request after its write, on the primary', async () => {
    await pauseReplay();
    const node = await api.post('/v1/ontology/nodes', { type: 'person', name: 'Grace Primary' });
    expect(node.status, node.text).to.equal(201);
    const patched = await api.patch(`/v1/ontology/nodes/${node.body.id}`, { name: 'Grace Hopper' });
    expect(patched.status, 'a write reads the primary, never the paused standby').to.equal(200);
    expect(patched.body.name).to.equal('Grace Hopper');
  });

  it('answers a malformed Weft-Read-After with 400, not a 500', async () => {
    const answer = await readAfter('/v1/ontology/nodes', 'yesterday');
    expect(answer.status).to.equal(400);
    expect(((await answer.json()) as { detail: string }).detail).to.match(/Weft-Read-After/);
  });

  it('holds RLS on the standby: another workspace reads nothing of this one’s through it', async () => {
    const created = await api.post('/v1/ontology/nodes', { type: 'person', name: 'Secret Standby' });
    await eventually(async () => (await api.get(`/v1/ontology/nodes/${created.body.id}`)).status === 200, {
      what: 'the standby to replay the write',
    });
    expect((await attacker.get(`/v1/ontology/nodes/${created.body.id}`)).status).to.equal(404);
    const listed = await attacker.get('/v1/ontology/nodes?limit=200');
    expect(listed.status).to.equal(200);
    expect(JSON.stringify(listed.body)).to.not.contain('Secret Standby');
    // And on the standby itself, the application's role without a workspace scope reads no row at all.
    const app = new Client({ connectionString: standbyUrl(variant.stack.config.DATABASE_URL) });
    await app.connect();
    try {
      const { rows } = await app.query('SELECT count(*)::int AS n FROM nodes');
      expect(rows[0].n).to.equal(0);
    } finally {
      await app.end();
    }
  });

  it('reads from the primary while the standby is down, and from the standby again once it is back', async () => {
    const created = await api.post('/v1/ontology/nodes', { type: 'person', name: 'Fallback' });
    await superuser.end();
    execFileSync('bash', ['scripts/standby.sh', 'down']);
    try {
      const before = await standbyReadCounts();
      const read = await api.get(`/v1/ontology/nodes/${created.body.id}`);
      expect(read.status, read.text).to.equal(200);
      // The failed read rests the standby: the next reads go straight to the primary, not through a failure each.
      for (let at = 0; at < 3; at++)
        expect((await api.get(`/v1/ontology/nodes/${created.body.id}`)).status).to.equal(200);
      const after = await standbyReadCounts();
      const failed = after.failed - before.failed;
      const resting = after.resting - before.resting;
      expect(failed + resting, 'every read went to the primary').to.equal(4);
      expect(resting, 'reads after the failure not tried there').to.be.at.least(1);
    } finally {
      execFileSync('bash', ['scripts/standby.sh', 'up']);
    }
    superuser = await standbySuperuser();
    await pauseReplay();
    const later = await api.post('/v1/ontology/nodes', { type: 'person', name: 'After The Outage' });
    // Paused again, the standby answers without the new node once the API reads from it again.
    await eventually(async () => (await api.get(`/v1/ontology/nodes/${later.body.id}`)).status === 404, {
      what: 'the API to read from the standby again',
    });
  });
});
