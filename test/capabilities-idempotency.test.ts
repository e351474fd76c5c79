import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { scheduleId } from '../src/app/schedules';
import { capabilityKeyPurgeWorkflow } from '../src/capabilities/workflow';
import { capClient } from './helpers/cap';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { newMember, newTenant } from './helpers/tenants';

const sessionsNamed = async (name: string): Promise<number> =>
  Number(
    (await getStack().ownerDataSource.query(`SELECT count(*) FROM agent_sessions WHERE name = $1`, [name]))[0].count,
  );

describe('capabilities: idempotency of write tools (Stripe’s rules)', () => {
  it('replays the stored envelope for the same key and body: Idempotent-Replayed, nothing runs again', async () => {
    const { api_key } = await newTenant();
    const cap = capClient(api_key);
    const name = `replay ${randomUUID()}`;
    const first = await cap('agent.start_session', { name, metadata: { a: 1, b: [1, 2] } }, 'key-1');
    expect(first.status).to.equal(200);
    expect(first.headers.get('idempotent-replayed')).to.equal(null);
    expect(first.body.idempotency_key).to.equal('key-1');

    // The same body with its keys in another order is the same request.
    const second = await cap('agent.start_session', { metadata: { b: [1, 2], a: 1 }, name }, 'key-1');
    expect(second.status).to.equal(200);
    expect(second.headers.get('idempotent-replayed')).to.equal('true');
    expect(second.body).to.deep.equal(first.body);
    expect(await sessionsNamed(name)).to.equal(1);
  });

  it('refuses the same key with another body or another tool: 409 idempotency_key_reused', async () => {
    const { api_key } = await newTenant();
    const cap = capClient(api_key);
    const { session_id } = (await cap('agent.start_session', { name: 'a' }, 'key-2')).body.result;

    const otherBody = await cap('agent.start_session', { name: 'b' }, 'key-2');
    expect(otherBody.status).to.equal(409);
    expect(otherBody.body.detail.error).to.equal('idempotency_key_reused');

    const otherTool = await cap('agent.heartbeat', { session_id }, 'key-2');
    expect(otherTool.status).to.equal(409);
    expect(otherTool.body.detail.error).to.equal('idempotency_key_reused');
  });

  it('gives twenty concurrent calls with one key exactly one side effect', async () => {
    const { api_key } = await newTenant();
    const cap = capClient(api_key);
    const name = `race ${randomUUID()}`;
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => cap('agent.start_session', { name }, 'race-key')),
    );
    expect(await sessionsNamed(name)).to.equal(1);

    const fresh = answers.filter((a) => a.status === 200 && a.headers.get('idempotent-replayed') === null);
    const replayed = answers.filter((a) => a.status === 200 && a.headers.get('idempotent-replayed') === 'true');
    const inUse = answers.filter((a) => a.status === 409);
    expect(fresh).to.have.length(1);
    expect(fresh.length + replayed.length + inUse.length).to.equal(20);
    for (const answer of replayed) expect(answer.body).to.deep.equal(fresh[0]!.body);
    for (const answer of inUse) expect(answer.body.detail.error).to.equal('idempotency_key_in_use');

    // Once the first has finished, the key replays.
    const later = await cap('agent.start_session', { name }, 'race-key');
    expect(later.headers.get('idempotent-replayed')).to.equal('true');
    expect(later.body.result.session_id).to.equal(fresh[0]!.body.result.session_id);
  });

  it('stores nothing for a failed call, so a retry with the key runs again', async () => {
    const { api_key, workspace_id } = await newTenant();
    const cap = capClient(api_key);
    const missing = await cap('agent.heartbeat', { session_id: randomUUID() }, 'key-3');
    expect(missing.status).to.equal(404);
    const [row] = await getStack().ownerDataSource.query(
      `SELECT count(*)::int AS n FROM capability_idempotency_keys WHERE workspace_id = $1`,
      [workspace_id],
    );
    expect(row.n).to.equal(0);
    // Not a replay of the 404 and not "reused": the key was never taken.
    const started = await cap('agent.start_session', {}, 'key-3');
    expect(started.status).to.equal(200);
    expect(started.headers.get('idempotent-replayed')).to.equal(null);
  });

  it('keeps a key to its workspace: another workspace’s identical key runs on its own', async () => {
    const a = await newTenant();
    const b = await newTenant();
    const name = `shared key ${randomUUID()}`;
    const first = await capClient(a.api_key)('agent.start_session', { name }, 'same-key');
    const second = await capClient(b.api_key)('agent.start_session', { name }, 'same-key');
    expect(second.status).to.equal(200);
    expect(second.headers.get('idempotent-replayed')).to.equal(null);
    expect(second.body.result.session_id).not.to.equal(first.body.result.session_id);
    expect(await sessionsNamed(name)).to.equal(2);
  });

  it('shares a key between the users of one workspace (a key belongs to the workspace)', async () => {
    const owner = await newTenant();
    const colleague = await newMember(owner.workspace_id);
    const first = await capClient(owner.api_key)('agent.start_session', { name: 'x' }, 'team-key');
    const second = await capClient(colleague.api_key)('agent.start_session', { name: 'x' }, 'team-key');
    expect(second.headers.get('idempotent-replayed')).to.equal('true');
    expect(second.body).to.deep.equal(first.body);
  });

  it('forgets a key after 24 hours: the same key then runs a new request', async () => {
    const { api_key, workspace_id } = await newTenant();
    const cap = capClient(api_key);
    const first = await cap('agent.start_session', { name: 'old' }, 'old-key');
    await getStack().ownerDataSource.query(
      `UPDATE capability_idempotency_keys SET created_at = now() - interval '24 hours 1 second'
       WHERE workspace_id = $1 AND idempotency_key = 'old-key'`,
      [workspace_id],
    );
    const fresh = await cap('agent.start_session', { name: 'new' }, 'old-key');
    expect(fresh.status).to.equal(200);
    expect(fresh.headers.get('idempotent-replayed')).to.equal(null);
    expect(fresh.body.result.session_id).not.to.equal(first.body.result.session_id);
  });

  it('caches nothing for read tools: the key is echoed and every call runs', async () => {
    const { api_key, tenant_id } = await newTenant(5);
    const cap = capClient(api_key);
    expect((await cap('billing.credits_balance', {}, 'read-key')).body.result.balance).to.equal(5);
    await getStack().ownerDataSource.query(`UPDATE tenants SET credit_balance = 9 WHERE id = $1`, [tenant_id]);
    const again = await cap('billing.credits_balance', {}, 'read-key');
    expect(again.body.result.balance).to.equal(9);
    expect(again.body.idempotency_key).to.equal('read-key');
    expect(again.headers.get('idempotent-replayed')).to.equal(null);
  });

  it('echoes the key in the Idempotency-Key response header', async () => {
    const { api_key } = await newTenant();
    const answered = await as(api_key).post('/v1/cap/agent.start_session', {}, { 'Idempotency-Key': 'header-key' });
    expect(answered.headers.get('idempotency-key')).to.equal('header-key');
  });
});

describe('capabilities: the Idempotency-Key purge (a Temporal Schedule)', () => {
  it('deletes keys older than 24 hours in every workspace and keeps younger ones', async () => {
    const { api_key, workspace_id } = await newTenant();
    const cap = capClient(api_key);
    await cap('agent.start_session', { name: 'old' }, 'purge-old');
    await cap('agent.start_session', { name: 'young' }, 'purge-young');
    const owner = getStack().ownerDataSource;
    await owner.query(
      `UPDATE capability_idempotency_keys SET created_at = now() - interval '25 hours'
       WHERE workspace_id = $1 AND idempotency_key = 'purge-old'`,
      [workspace_id],
    );
    const { config, runtime } = getStack();
    const schedule = await runtime.temporal.client.schedule
      .getHandle(scheduleId(config.TEMPORAL_TASK_QUEUE, { name: 'capability-key-purge' }))
      .describe();
    expect(schedule.action).to.include({ workflowType: 'capabilityKeyPurgeWorkflow' });

    const handle = await runtime.temporal.workflows.start(capabilityKeyPurgeWorkflow, { batchSize: 2 });
    expect((await handle.result()).purged).to.be.at.least(1);
    const left = await owner.query(
      `SELECT idempotency_key FROM capability_idempotency_keys WHERE workspace_id = $1 ORDER BY 1`,
      [workspace_id],
    );
    expect(left.map((row: { idempotency_key: string }) => row.idempotency_key)).to.deep.equal(['purge-young']);
  });

  it('deletes stored code-index batches older than 24 hours in every workspace and keeps younger ones', async () => {
    const tenants = [await newTenant(), await newTenant()];
    const owner = getStack().ownerDataSource;
    for (const { workspace_id } of tenants) {
      // An applied batch (its result kept) and one whose workflow never ran (the batch kept), both a day old.
      await owner.query(
        `INSERT INTO code_index_batches (workspace_id, repo, batch, result, created_at, applied_at) VALUES
           ($1, 'old-applied', NULL, '{}', now() - interval '25 hours', now() - interval '25 hours'),
           ($1, 'old-unapplied', '{}', NULL, now() - interval '25 hours', NULL),
           ($1, 'young', NULL, '{}', now() - interval '1 hour', now() - interval '1 hour')`,
        [workspace_id],
      );
    }
    const handle = await getStack().runtime.temporal.workflows.start(capabilityKeyPurgeWorkflow, { batchSize: 2 });
    expect((await handle.result()).codeBatches).to.be.at.least(4);
    for (const { workspace_id } of tenants) {
      const left = await owner.query(`SELECT repo FROM code_index_batches WHERE workspace_id = $1`, [workspace_id]);
      expect(left.map((row: { repo: string }) => row.repo)).to.deep.equal(['young']);
    }
  });
});
