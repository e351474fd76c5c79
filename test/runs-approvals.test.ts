import { expect } from 'chai';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { finished } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newMember, newTenant } from './helpers/tenants';

type Client = ReturnType<typeof as>;

const read = (client: Client, id: string) => client.get(`/v1/runs/${id}`).then((answer) => answer.body);

/** Dispatches a one-step run whose step waits on approval; answers the run and its pending approval. */
async function waitingRun(client: Client): Promise<{ id: string; approvalId: string }> {
  const dispatched = await client.post('/v1/runs', {
    agent: 'playbook',
    input: { steps: [{ tool: 'agent.start_session', input: { name: 'gated' }, requires_approval: true }] },
  });
  expect(dispatched.status, dispatched.text).to.equal(202);
  const id = dispatched.body.execution_id;
  const run = await eventually(
    async () => {
      const body = await read(client, id);
      return body.approvals.some((approval: any) => approval.status === 'pending') && body;
    },
    { what: 'the run to await approval', timeoutMs: 30_000 },
  );
  return { id, approvalId: run.approvals[0].approval_id };
}

/** A user JWT's `jti`, the id its approvals are recorded under. */
const jtiOf = (jwt: string): string => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')).jti;

const approve = (client: Client, approvalId: string, notes?: string) =>
  client.post(`/v1/approvals/${approvalId}/resolve`, { decision: 'APPROVED', ...(notes ? { notes } : {}) });

/** A second API key of the JWT's user, with the scopes a reviewer needs. */
const reviewerKey = async (userJwt: string): Promise<string> =>
  (
    await as(userJwt).post('/v1/auth/me/api-keys', {
      name: 'reviewer',
      scopes: ['runs:read', 'runs:write', 'approvals:write', 'capabilities:write'],
    })
  ).body.token;

describe('approvals: separation of duties (issue 23 item 2)', () => {
  it('never gives an MCP token approvals:write: its resolve is a 403 and the run still waits', async () => {
    const { api_key, user_jwt, workspace_id } = await newTenant();
    const { id, approvalId } = await waitingRun(as(api_key));
    const minted = await as(user_jwt).post('/v1/mcp/token', { workspace_id });
    expect(minted.status, minted.text).to.equal(201);
    const agent = as(minted.body.token);
    const refused = await approve(agent, approvalId, 'approved by an agent token');
    expect(refused.status).to.equal(403);
    expect(refused.body.detail).to.equal('Missing scope approvals:write');
    expect((await read(as(api_key), id)).status).to.equal('AWAITING_APPROVAL');
    await as(api_key).post(`/v1/runs/${id}/cancel`);
  });

  it('refuses the dispatching credential (403, with why); another credential of a lone user may', async () => {
    const { api_key, user_jwt, user_id } = await newTenant();
    const { id, approvalId } = await waitingRun(as(api_key));
    const own = await approve(as(api_key), approvalId);
    expect(own.status).to.equal(403);
    expect(own.body.detail).to.deep.include({ error: 'approval_by_dispatcher' });
    expect(own.body.detail.message).to.match(/dispatched this run/);
    const rejectOwn = await as(api_key).post(`/v1/approvals/${approvalId}/resolve`, { decision: 'REJECTED' });
    expect(rejectOwn.status).to.equal(403);

    // Alone in the workspace, the user approves through another, human credential.
    const resolved = await approve(as(user_jwt), approvalId, 'checked it myself');
    expect(resolved.status, resolved.text).to.equal(200);
    const run = await finished(as(api_key), id);
    expect(run.status).to.equal('SUCCEEDED');
    const viaJwt = { kind: 'user_jwt', id: jtiOf(user_jwt) };
    expect(run.approvals[0]).to.deep.include({
      status: 'approved',
      resolved_by: user_id,
      resolved_by_credential: viaJwt,
    });

    const audit = (await as(api_key).get(`/v1/runs/${id}/audit`)).body;
    expect(audit.valid).to.equal(true);
    const link = audit.steps.find((entry: any) => entry.kind === 'APPROVAL');
    expect(link.entry).to.deep.include({ resolved_by: user_id, resolved_by_credential: viaJwt });
  });

  it('with another member, the dispatching user’s other credentials are refused; a colleague approves', async () => {
    const owner = await newTenant();
    const colleague = await newMember(owner.workspace_id);
    const { id, approvalId } = await waitingRun(as(owner.api_key));

    const sameUser = await approve(as(owner.user_jwt), approvalId);
    expect(sameUser.status).to.equal(403);
    expect(sameUser.body.detail).to.deep.include({ error: 'approval_by_dispatching_user' });
    expect(sameUser.body.detail.message).to.match(/another member/);
    expect((await approve(as(await reviewerKey(owner.user_jwt)), approvalId)).status).to.equal(403);

    const resolved = await approve(as(colleague.api_key), approvalId);
    expect(resolved.status, resolved.text).to.equal(200);
    const run = await finished(as(owner.api_key), id);
    expect(run.status).to.equal('SUCCEEDED');
    const keyId = (await as(colleague.user_jwt).get('/v1/auth/me/api-keys')).body.find(
      (key: any) => key.workspace_id === owner.workspace_id,
    ).id;
    expect(run.approvals[0]).to.deep.include({
      resolved_by: colleague.user_id,
      resolved_by_credential: { kind: 'api_key', id: keyId },
    });
  });

  it('NM-5: keys minted from the dispatching key are the dispatcher under any policy; a lone person may', async () => {
    const owner = await newTenant();
    const bootstrap = as(owner.api_key);
    const { id, approvalId } = await waitingRun(bootstrap);
    const mint = async (by: Client, scopes: string[]) => {
      const minted = await by.post('/v1/auth/me/api-keys', { name: 'minted', scopes });
      expect(minted.status, minted.text).to.equal(201);
      return minted.body;
    };
    // The review's attack: after the dispatch, the dispatching (bootstrap) key mints a sibling to approve with.
    const sibling = await mint(bootstrap, ['approvals:write', 'runs:read']);
    const refused = await approve(as(sibling.token), approvalId);
    expect(refused.status, refused.text).to.equal(403);
    expect(refused.body.detail.error).to.equal('approval_by_dispatcher');
    expect(refused.body.detail.message).to.match(/minted/);
    // Further down the line too: a key it minted with api_keys:manage mints another.
    const child = await mint(bootstrap, ['api_keys:manage', 'approvals:write', 'runs:read']);
    const grandchild = await mint(as(child.token), ['approvals:write', 'runs:read']);
    expect((await approve(as(grandchild.token), approvalId)).status).to.equal(403);
    // The key records what minted it; one the person minted records their session.
    const keyId = (await bootstrap.get('/v1/auth/me/api-keys')).body.find((key: any) => key.name.endsWith(' key')).id;
    expect(sibling.minted_by).to.deep.equal({ kind: 'api_key', id: keyId });
    expect(grandchild.minted_by).to.deep.equal({ kind: 'api_key', id: child.id });
    // Even where the policy lets the dispatching user resolve: those keys are the dispatcher, not the person.
    await as(owner.user_jwt).patch('/v1/approval-policy', { dispatcher_may_approve: 'always' });
    expect((await approve(as(sibling.token), approvalId)).status).to.equal(403);
    await as(owner.user_jwt).patch('/v1/approval-policy', { dispatcher_may_approve: 'when_alone' });
    expect((await read(bootstrap, id)).status).to.equal('AWAITING_APPROVAL');

    // The person, alone in the workspace, approves through their own session; the answer says why it may.
    const resolved = await approve(as(owner.user_jwt), approvalId);
    expect(resolved.status, resolved.text).to.equal(200);
    expect(resolved.body.dispatcher_resolved.policy).to.equal('when_alone');
    expect(resolved.body.dispatcher_resolved.message).to.match(/only member/);
    expect((await finished(bootstrap, id)).status).to.equal('SUCCEEDED');

    // Dispatched through the person's session: a key that session mints is that session, not another person.
    const viaJwt = await waitingRun(as(owner.user_jwt));
    const fromSession = await mint(as(owner.user_jwt), ['approvals:write', 'runs:read']);
    expect(fromSession.minted_by).to.deep.equal({ kind: 'user_jwt', id: jtiOf(owner.user_jwt) });
    const sessionKey = await approve(as(fromSession.token), viaJwt.approvalId);
    expect(sessionKey.status, sessionKey.text).to.equal(403);
    expect(sessionKey.body.detail.error).to.equal('approval_by_dispatcher');
    expect((await approve(bootstrap, viaJwt.approvalId)).status).to.equal(200);
    // A colleague's decision is no dispatcher's: nothing to explain.
    const colleague = await newMember(owner.workspace_id);
    const third = await waitingRun(bootstrap);
    const byColleague = await approve(as(colleague.user_jwt), third.approvalId);
    expect(byColleague.status, byColleague.text).to.equal(200);
    expect(byColleague.body.dispatcher_resolved).to.equal(null);
  });

  it('follows the workspace policy: `always` and `never` for the dispatching user’s other credentials', async () => {
    const owner = await newTenant();
    const policy = await as(owner.user_jwt).get('/v1/approval-policy');
    expect(policy.status).to.equal(200);
    expect(policy.body).to.deep.equal({ dispatcher_may_approve: 'when_alone' });

    const never = await as(owner.user_jwt).patch('/v1/approval-policy', { dispatcher_may_approve: 'never' });
    expect(never.body).to.deep.equal({ dispatcher_may_approve: 'never' });
    const alone = await waitingRun(as(owner.api_key));
    const refused = await approve(as(owner.user_jwt), alone.approvalId);
    expect(refused.status).to.equal(403);
    expect(refused.body.detail).to.deep.include({ error: 'approval_by_dispatching_user' });
    await as(owner.api_key).post(`/v1/runs/${alone.id}/cancel`);

    await newMember(owner.workspace_id);
    await as(owner.user_jwt).patch('/v1/approval-policy', { dispatcher_may_approve: 'always' });
    const crowded = await waitingRun(as(owner.api_key));
    expect((await approve(as(owner.api_key), crowded.approvalId)).status).to.equal(403);
    expect((await approve(as(owner.user_jwt), crowded.approvalId)).status).to.equal(200);
    expect((await finished(as(owner.api_key), crowded.id)).status).to.equal('SUCCEEDED');

    const bad = await as(owner.user_jwt).patch('/v1/approval-policy', { dispatcher_may_approve: 'sometimes' });
    expect(bad.status).to.equal(422);
    const minted = await as(owner.user_jwt).post('/v1/mcp/token', { workspace_id: owner.workspace_id });
    const agent = await as(minted.body.token).patch('/v1/approval-policy', { dispatcher_may_approve: 'always' });
    expect(agent.status).to.equal(403);
    const stored = await getStack().ownerDataSource.query(
      `SELECT dispatcher_may_approve FROM approval_policies WHERE workspace_id = $1`,
      [owner.workspace_id],
    );
    expect(stored).to.deep.equal([{ dispatcher_may_approve: 'always' }]);
  });
});
