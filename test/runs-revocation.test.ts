import { expect } from 'chai';
import { STORED_PRINCIPAL_REWRITE } from '../migrations/1763780015500-stored-principal';
import { credentialLapse, standingScopeOf, storedPrincipalLive } from '../src/platform/auth/credential-liveness';
import { revokeUserToken } from '../src/platform/auth/repository';
import type { StoredPrincipal } from '../src/platform/auth/stored-principal';
import { CredentialLapsed } from '../src/platform/db/unit-of-work';
import { as } from './helpers/http';
import { finished, runUntil } from './helpers/runs';
import { openSse } from './helpers/sse';
import { getStack } from './helpers/stack';
import { creditBalance, newMember, newTenant } from './helpers/tenants';

type Client = ReturnType<typeof as>;

const sessions = async (workspaceId: string) =>
  (
    await getStack().ownerDataSource.query(`SELECT count(*)::int AS n FROM agent_sessions WHERE workspace_id = $1`, [
      workspaceId,
    ])
  )[0].n;

/** A paid step that runs at once, then a write step that waits on approval. */
async function waitingRun(client: Client): Promise<{ id: string; approvalId: string }> {
  const dispatched = await client.post('/v1/runs', {
    agent: 'playbook',
    input: {
      steps: [
        { tool: 'ontology.search', input: { query: 'ada' } },
        { tool: 'agent.start_session', input: { name: 'after approval' }, requires_approval: true },
      ],
    },
  });
  expect(dispatched.status, dispatched.text).to.equal(202);
  const id = dispatched.body.execution_id;
  const run = await runUntil(client, id, (body) => body.approvals.length > 0, 'the run to await approval');
  return { id, approvalId: run.approvals[0].approval_id };
}

/** The run ended FAILED with credential_revoked at its gated step, which did nothing and cost nothing. */
function expectRevoked(run: any) {
  expect(run.status).to.equal('FAILED');
  expect(run.error).to.include({ code: 'credential_revoked', step: 1 });
  expect(run.error.message).to.match(/credential/);
  expect(run.steps.map((step: any) => [step.status, step.credits_charged])).to.deep.equal([
    ['SUCCEEDED', 1],
    ['FAILED', 0],
  ]);
  expect(run.steps[1].error.code).to.equal('credential_revoked');
  expect(run.credits_charged).to.equal(1);
}

const jtiOf = (jwt: string): { jti: string; expiresAt: Date } => {
  const payload = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'));
  return { jti: payload.jti, expiresAt: new Date(payload.exp * 1000) };
};

describe('runs: revocation and expiry reach running work (issue 23 item 3)', () => {
  it('a key revoked while its run waits: the approved step does not run, the run ends credential_revoked', async () => {
    const tenant = await newTenant(10);
    const key = await as(tenant.user_jwt).post('/v1/auth/me/api-keys', {
      name: 'leaked',
      scopes: ['runs:read', 'runs:write', 'capabilities:read', 'capabilities:write'],
    });
    const leaked = as(key.body.token);
    const { id, approvalId } = await waitingRun(leaked);
    expect((await as(tenant.user_jwt).delete(`/v1/auth/me/api-keys/${key.body.id}`)).status).to.equal(200);
    expect((await leaked.get(`/v1/runs/${id}`)).status).to.equal(401);

    const resolved = await as(tenant.user_jwt).post(`/v1/approvals/${approvalId}/resolve`, { decision: 'APPROVED' });
    expect(resolved.status, resolved.text).to.equal(200);
    const run = await finished(as(tenant.api_key), id);
    expectRevoked(run);
    expect(await sessions(tenant.workspace_id)).to.equal(0);
    expect(await creditBalance(tenant.tenant_id)).to.equal(9);
    const audit = (await as(tenant.api_key).get(`/v1/runs/${id}/audit`)).body;
    expect(audit.valid).to.equal(true);
    expect(audit.steps.at(-1).entry.error.code).to.equal('credential_revoked');
  });

  it('a run stored in the earlier spelling (expires_at, no userId) is rewritten; its expiry still holds', async () => {
    const tenant = await newTenant(10);
    const waiting = await waitingRun(as(tenant.api_key));
    const owner = getStack().ownerDataSource;
    const [{ principal }] = await owner.query(`SELECT principal FROM run_executions WHERE id = $1`, [waiting.id]);
    const past = '2020-01-01T00:00:00.000Z';
    // As a run dispatched before the one spelling was stored it.
    await owner.query(
      `UPDATE run_executions SET principal = jsonb_build_object('tenantId', principal->'tenantId',
         'scopes', principal->'scopes', 'credential', jsonb_build_object('kind', 'api_key',
         'id', principal->'credential'->'id', 'expires_at', $2::text))
       WHERE id = $1`,
      [waiting.id, past],
    );
    await owner.query(STORED_PRINCIPAL_REWRITE);
    const [rewritten] = await owner.query(`SELECT principal FROM run_executions WHERE id = $1`, [waiting.id]);
    expect(rewritten.principal).to.deep.equal({
      ...principal,
      credential: { ...principal.credential, expiresAt: past },
    });
    expect(principal.userId).to.equal(tenant.user_id);
    await as(tenant.user_jwt).post(`/v1/approvals/${waiting.approvalId}/resolve`, { decision: 'APPROVED' });
    expectRevoked(await finished(as(tenant.user_jwt), waiting.id));
  });

  it('an expired key, and a user JWT revoked by the operator, end their runs the same way', async () => {
    const tenant = await newTenant(10);
    const expiring = await waitingRun(as(tenant.api_key));
    await getStack().ownerDataSource.query(
      `UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE user_id = $1 AND kind = 'api_key'`,
      [tenant.user_id],
    );
    await as(tenant.user_jwt).post(`/v1/approvals/${expiring.approvalId}/resolve`, { decision: 'APPROVED' });
    expectRevoked(await finished(as(tenant.user_jwt), expiring.id));

    // A colleague resolves: a key the JWT minted would stand for the dispatcher (separation by person).
    const colleague = await newMember(tenant.workspace_id);
    const viaJwt = await waitingRun(as(tenant.user_jwt));
    await getStack().ownerDataSource.transaction((m) => revokeUserToken(m, jtiOf(tenant.user_jwt)));
    const resolved = await as(colleague.api_key).post(`/v1/approvals/${viaJwt.approvalId}/resolve`, {
      decision: 'APPROVED',
    });
    expect(resolved.status, resolved.text).to.equal(200);
    expectRevoked(await finished(as(colleague.api_key), viaJwt.id));
    expect(await sessions(tenant.workspace_id)).to.equal(0);
  });

  it('a user removed from the workspace: their run stops at its next step', async () => {
    const owner = await newTenant(10);
    const leaver = await newMember(owner.workspace_id);
    const { id, approvalId } = await waitingRun(as(leaver.api_key));
    await getStack().ownerDataSource.query(`DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2`, [
      owner.workspace_id,
      leaver.user_id,
    ]);
    await as(owner.api_key).post(`/v1/approvals/${approvalId}/resolve`, { decision: 'APPROVED' });
    expectRevoked(await finished(as(owner.api_key), id));
    expect(await sessions(owner.workspace_id)).to.equal(0);
  });

  it('an llm run checks before each model turn: revoked mid-step, it ends before the model answers', async () => {
    const tenant = await newTenant(10);
    const key = await as(tenant.user_jwt).post('/v1/auth/me/api-keys', {
      name: 'agent',
      scopes: ['runs:read', 'runs:write', 'capabilities:read'],
    });
    // The search step's charge waits on the tenant's row, held here, so the key is revoked while the step runs.
    const holder = getStack().ownerDataSource.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    try {
      await holder.query(`SELECT 1 FROM tenants WHERE id = $1 FOR UPDATE`, [tenant.tenant_id]);
      const dispatched = await as(key.body.token).post('/v1/runs', {
        agent: 'llm',
        input: { goal: 'find ada lovelace', approval: 'none' },
      });
      const id = dispatched.body.execution_id;
      await runUntil(as(tenant.api_key), id, (run) => run.steps[0]?.status === 'RUNNING', 'the step to run');
      await as(tenant.user_jwt).delete(`/v1/auth/me/api-keys/${key.body.id}`);
      await holder.commitTransaction();
      const run = await finished(as(tenant.api_key), id);
      expect(run.status).to.equal('FAILED');
      expect(run.error).to.include({ code: 'credential_revoked', step: null });
      expect(run.output).to.equal(null);
      expect(run.steps.map((step: any) => [step.tool, step.status])).to.deep.equal([['ontology.search', 'SUCCEEDED']]);
      expect(run.credits_charged).to.equal(1);
    } finally {
      if (holder.isTransactionActive) await holder.rollbackTransaction();
      await holder.release();
    }
  });
});

// The one check every deferred work makes before it acts (runs, callbacks, triggers, schedules,
// change-sets): `weft_credential_live`, one statement (issue 27).
describe('deferred work: the stored identity check', () => {
  it('reads the identity’s key as its user, then hands the transaction back to the user it acted as', async () => {
    const owner = await newTenant();
    const colleague = await newMember(owner.workspace_id);
    const [key] = await getStack().ownerDataSource.query(
      `SELECT id FROM api_keys WHERE workspace_id = $1 AND user_id = $2 AND kind = 'api_key'`,
      [owner.workspace_id, colleague.user_id],
    );
    const identity: Pick<StoredPrincipal, 'userId' | 'credential'> = {
      userId: colleague.user_id,
      credential: { kind: 'api_key', id: key.id as string, expiresAt: null },
    };
    const check = () =>
      getStack().runtime.uow({ workspaceId: owner.workspace_id, userId: owner.user_id }, async (m) => ({
        live: await storedPrincipalLive(m, owner.workspace_id, identity),
        actingAs: (await m.query(`SELECT current_setting('app.user_id') AS u`))[0].u,
      }));
    expect(await check()).to.deep.equal({ live: true, actingAs: owner.user_id });
    await getStack().ownerDataSource.query(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [key.id]);
    expect(await check()).to.deep.equal({ live: false, actingAs: owner.user_id });
    // A stored expiry in the past ends it as well, whatever the key's row says.
    await getStack().ownerDataSource.query(`UPDATE api_keys SET revoked_at = NULL WHERE id = $1`, [key.id]);
    expect(await check()).to.deep.equal({ live: true, actingAs: owner.user_id });
    identity.credential.expiresAt = new Date(Date.now() - 1000).toISOString();
    expect(await check()).to.deep.equal({ live: false, actingAs: owner.user_id });
  });
});

// Issue 39 item 4 (review NM-1): an open stream follows its credential. Each read of a stream re-checks
// it and a timer does so when the stream is quiet (STREAM_CREDENTIAL_RECHECK_MS, short in tests); a
// lapsed credential ends the stream with a final `error` event, and nothing more is sent.
describe('streams follow their credential (issue 39, review NM-1)', () => {
  const gated = {
    agent: 'playbook',
    input: { steps: [{ tool: 'agent.start_session', input: { name: 'gated' }, requires_approval: true }] },
  };
  const balanceRun = { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance', input: {} }] } };
  const dispatch = async (client: Client, body: unknown): Promise<string> => {
    const answer = await client.post('/v1/runs', body);
    expect(answer.status, answer.text).to.equal(202);
    return answer.body.execution_id;
  };
  const mintKey = async (userJwt: string) =>
    (
      await as(userJwt).post('/v1/auth/me/api-keys', {
        name: 'streamer',
        scopes: ['runs:read', 'runs:write', 'billing:read', 'capabilities:read', 'capabilities:write'],
      })
    ).body as { id: string; token: string };
  /** The stream's last event is the credential error named `code`, and it ended there. */
  const expectLapsed = async (stream: Awaited<ReturnType<typeof openSse>>, code: string) => {
    const events = await stream.ended();
    const last = events.at(-1)!;
    expect(last.event).to.equal('error');
    expect(last.data).to.deep.include({ status: 401, error_code: code });
    expect(last.data.detail).to.be.a('string');
    return events;
  };

  it('a stream’s read carries the check: rows while the key stands, CredentialLapsed once revoked', async () => {
    const tenant = await newTenant(10);
    const key = await mintKey(tenant.user_jwt);
    const { read } = getStack().runtime;
    const principal = {
      userId: tenant.user_id,
      workspaceId: tenant.workspace_id,
      tenantId: tenant.tenant_id,
      scopes: new Set<never>(),
      credential: { kind: 'api_key' as const, id: key.id, expiresAt: null },
    };
    const scope = standingScopeOf(principal);
    const workspaces = () => read<{ id: string }>(scope, `SELECT workspace_id AS id FROM memberships`);
    expect((await workspaces()).map((row) => row.id)).to.include(tenant.workspace_id);
    await getStack().ownerDataSource.query(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [key.id]);
    let thrown: unknown;
    await workspaces().catch((error: unknown) => {
      thrown = error;
    });
    expect(thrown).to.be.instanceOf(CredentialLapsed);
    expect(await credentialLapse(read, principal)).to.equal('credential_revoked');
    // A stored expiry in the past is a lapse too, told apart from a revocation.
    const expired = { ...principal, credential: { ...principal.credential, expiresAt: new Date(Date.now() - 1000) } };
    expect(await credentialLapse(read, expired)).to.equal('credential_expired');
  });

  it('the review’s attack: a revoked key’s workspace stream ends (credential_revoked) before a later run', async () => {
    const tenant = await newTenant(10);
    const key = await mintKey(tenant.user_jwt);
    const stream = await openSse('/v1/runs/events', key.token);
    expect(stream.status).to.equal(200);
    expect((await as(tenant.user_jwt).delete(`/v1/auth/me/api-keys/${key.id}`)).status).to.equal(200);
    expect((await as(key.token).get('/v1/runs')).status).to.equal(401);
    // Another credential's run: its outputs must not reach the revoked stream.
    const id = await dispatch(as(tenant.api_key), balanceRun);
    await finished(as(tenant.api_key), id);
    const events = await expectLapsed(stream, 'credential_revoked');
    expect(events.filter((event) => event.data.execution_id === id)).to.deep.equal([]);
    // Reconnecting with it is refused.
    expect((await openSse('/v1/runs/events', key.token)).status).to.equal(401);
  });

  it('a quiet run stream ends when its key is revoked, and when its user leaves the workspace', async () => {
    const tenant = await newTenant(10);
    const key = await mintKey(tenant.user_jwt);
    const id = await dispatch(as(tenant.api_key), gated);
    const stream = await openSse(`/v1/runs/${id}/events`, key.token);
    await stream.until((event) => event.event === 'approval.requested', 'approval.requested');
    await as(tenant.user_jwt).delete(`/v1/auth/me/api-keys/${key.id}`);
    await expectLapsed(stream, 'credential_revoked');

    const leaver = await newMember(tenant.workspace_id);
    const watching = await openSse(`/v1/runs/${id}/events`, leaver.api_key);
    const byJwt = await openSse(`/v1/runs/${id}/events`, leaver.user_jwt);
    await watching.until((event) => event.event === 'approval.requested', 'approval.requested');
    await byJwt.until((event) => event.event === 'approval.requested', 'approval.requested');
    await getStack().ownerDataSource.query(`DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2`, [
      tenant.workspace_id,
      leaver.user_id,
    ]);
    await expectLapsed(watching, 'member_removed');
    await expectLapsed(byJwt, 'member_removed');
    await as(tenant.api_key).post(`/v1/runs/${id}/cancel`);
  });

  it('an expired key and a revoked user JWT end their streams: credential_expired, credential_revoked', async () => {
    const tenant = await newTenant(10);
    const key = await mintKey(tenant.user_jwt);
    const id = await dispatch(as(tenant.api_key), gated);
    const byKey = await openSse(`/v1/runs/${id}/events`, key.token);
    const byJwt = await openSse('/v1/runs/events', tenant.user_jwt);
    await byKey.until((event) => event.event === 'approval.requested', 'approval.requested');
    await getStack().ownerDataSource.query(
      `UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`,
      [key.id],
    );
    await expectLapsed(byKey, 'credential_expired');
    await getStack().ownerDataSource.transaction((m) => revokeUserToken(m, jtiOf(tenant.user_jwt)));
    await expectLapsed(byJwt, 'credential_revoked');
    await as(tenant.api_key).post(`/v1/runs/${id}/cancel`);
  });
});
