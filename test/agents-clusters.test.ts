import { expect } from 'chai';
import { clusterFailedSession } from '../src/agents/service';
import { capClient } from './helpers/cap';
import { eventually } from './helpers/eventually';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

type Cap = ReturnType<typeof capClient>;

async function failSession(cap: Cap, errorSignature: string): Promise<string> {
  const { session_id } = (await cap('agent.start_session')).body.result;
  const ended = await cap('agent.end_session', { session_id, outcome: 'failed', error_signature: errorSignature });
  expect(ended.status).to.equal(200);
  return session_id;
}

const clusters = async (cap: Cap, body = {}) => (await cap('agent.failure_clusters', body)).body.result.clusters;

describe('failure clusters: agent.end_session failed → outbox → workflow → agent.failure_clusters', () => {
  it('groups failures whose signatures differ only in digits, ids, strings and paths', async () => {
    const cap = capClient((await newTenant()).api_key);
    const a = await failSession(cap, `TypeError: cannot read 'id' of undefined at /srv/app/a.ts:10:3 (job 41)`);
    const b = await failSession(cap, `TypeError:  cannot read "name" of undefined at /home/ci/b.ts:7:1 (job 977)`);
    const other = await failSession(cap, 'ECONNREFUSED 127.0.0.1:5432');

    const listed = await eventually(
      async () => {
        const rows = await clusters(cap);
        return rows.length === 2 && rows[0].count === 2 ? rows : undefined;
      },
      { what: 'two clusters' },
    );
    expect(listed[0].signature).to.equal('TypeError: cannot read <str> of undefined at <path> (job <n>)');
    expect(listed[0].recent_session_ids).to.deep.equal([b, a]);
    expect(listed[1]).to.include({ count: 1, signature: 'ECONNREFUSED <n>.<n>.<n>.<n>:<n>' });
    expect(listed[1].recent_session_ids).to.deep.equal([other]);
    expect(Date.parse(listed[0].first_seen)).to.be.at.most(Date.parse(listed[0].last_seen));
  });

  it('keeps the last five session ids, newest first, and orders clusters by count', async () => {
    const cap = capClient((await newTenant()).api_key);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await failSession(cap, `Timeout after ${1000 + i} ms`));
    await failSession(cap, 'rare failure');
    const listed = await eventually(
      async () => {
        const rows = await clusters(cap);
        return rows[0]?.count === 6 && rows.length === 2 ? rows : undefined;
      },
      { what: 'six failures counted' },
    );
    expect(listed[0].recent_session_ids).to.deep.equal(ids.slice(1).reverse());
    expect(listed[1].count).to.equal(1);
    expect(await clusters(cap, { limit: 1 })).to.have.length(1);
  });

  it('counts a session once however often its event is handled, and ignores successes', async () => {
    const { api_key, workspace_id } = await newTenant();
    const cap = capClient(api_key);
    const failed = await failSession(cap, 'boom 1');
    const { session_id: fine } = (await cap('agent.start_session')).body.result;
    await cap('agent.end_session', { session_id: fine, outcome: 'succeeded', error_signature: 'not a failure' });
    await eventually(async () => (await clusters(cap))[0]?.count === 1, { what: 'the failure counted' });

    // What a redelivered event or a retried activity would do: nothing more.
    const { uow } = getStack().runtime;
    const again = await uow({ workspaceId: workspace_id }, (m) => clusterFailedSession(m, workspace_id, failed));
    expect(again).to.deep.equal({ clustered: false });
    const listed = await clusters(cap);
    expect(listed).to.have.length(1);
    expect(listed[0].count).to.equal(1);
  });

  it('shows a workspace only its own clusters', async () => {
    const victim = capClient((await newTenant()).api_key);
    await failSession(victim, 'secret failure in /srv/secret.ts');
    await eventually(async () => (await clusters(victim)).length === 1, { what: 'the victim’s cluster' });
    const attacker = capClient((await newTenant()).api_key);
    expect(await clusters(attacker)).to.deep.equal([]);
  });
});
