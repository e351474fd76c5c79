import { expect } from 'chai';
import { capClient } from './helpers/cap';
import { getStack } from './helpers/stack';
import { newMember, newTenant } from './helpers/tenants';

describe('agent sessions: agent.start_session, agent.heartbeat, agent.end_session', () => {
  it('opens an active session that heartbeats until it ends', async () => {
    const { api_key } = await newTenant();
    const cap = capClient(api_key);
    const started = await cap('agent.start_session', { name: 'refactor graph', metadata: { model: 'x' } });
    expect(started.status).to.equal(200);
    expect(started.body.credits_charged).to.equal(0);
    const { session_id, status, heartbeat_ttl_seconds } = started.body.result;
    expect(status).to.equal('active');
    expect(heartbeat_ttl_seconds).to.equal(300);

    const beat = await cap('agent.heartbeat', { session_id });
    expect(beat.status).to.equal(200);
    expect(beat.body.result).to.include({ session_id, status: 'active', already_inactive: false });
  });

  it('ends a session with its outcome, idempotently; a heartbeat then reports already_inactive', async () => {
    const { api_key } = await newTenant();
    const cap = capClient(api_key);
    const { session_id } = (await cap('agent.start_session')).body.result;

    const ended = await cap('agent.end_session', { session_id, outcome: 'succeeded' });
    expect(ended.status).to.equal(200);
    expect(ended.body.result).to.deep.equal({ session_id, status: 'ended', outcome: 'succeeded', abandoned_claims: 0 });

    const again = await cap('agent.end_session', { session_id, outcome: 'failed', error_signature: 'late' });
    expect(again.status).to.equal(200);
    expect(again.body.result).to.deep.equal({ session_id, status: 'ended', outcome: 'succeeded', abandoned_claims: 0 });

    const beat = await cap('agent.heartbeat', { session_id });
    expect(beat.body.result).to.include({ session_id, status: 'ended', already_inactive: true });
  });

  it('refuses an unknown outcome with 422 naming the field', async () => {
    const { api_key } = await newTenant();
    const cap = capClient(api_key);
    const { session_id } = (await cap('agent.start_session')).body.result;
    const refused = await cap('agent.end_session', { session_id, outcome: 'exploded' });
    expect(refused.status).to.equal(422);
    expect(refused.body.detail[0].loc).to.deep.equal(['body', 'outcome']);
  });

  it('answers 404 for a session of another workspace, as for one that never existed', async () => {
    const victim = await newTenant();
    const attacker = await newTenant();
    const { session_id } = (await capClient(victim.api_key)('agent.start_session')).body.result;
    const cap = capClient(attacker.api_key);
    for (const tool of ['agent.heartbeat', 'agent.end_session']) {
      const body = tool === 'agent.end_session' ? { session_id, outcome: 'cancelled' } : { session_id };
      const stolen = await cap(tool, body);
      expect(stolen.status, tool).to.equal(404);
      const unknown = await cap(tool, { ...body, session_id: '00000000-0000-4000-8000-000000000000' });
      expect(unknown.status, tool).to.equal(404);
      expect(stolen.body).to.deep.equal({
        detail: { ...unknown.body.detail, session_id },
      });
    }
    const [row] = await getStack().ownerDataSource.query(`SELECT status FROM agent_sessions WHERE id = $1`, [
      session_id,
    ]);
    expect(row.status).to.equal('active');
  });

  it('lets only its own user heartbeat or end a session in a shared workspace (403)', async () => {
    const owner = await newTenant();
    const colleague = await newMember(owner.workspace_id);
    const { session_id } = (await capClient(owner.api_key)('agent.start_session')).body.result;
    const cap = capClient(colleague.api_key);
    expect((await cap('agent.heartbeat', { session_id })).status).to.equal(403);
    expect((await cap('agent.end_session', { session_id, outcome: 'cancelled' })).status).to.equal(403);
  });
});
