import { expect } from 'chai';
import { SignJWT } from 'jose';
import { SCOPES } from '../src/platform/auth/scopes';
import { as, request } from './helpers/http';
import { getStack } from './helpers/stack';
import { newMember, newTenant } from './helpers/tenants';

describe('API keys (4.5) and authentication (5)', () => {
  it('lists the valid scopes, sorted', async () => {
    const { api_key } = await newTenant();
    const response = await as(api_key).get('/v1/auth/me/api-keys/scopes');
    expect(response.status).to.equal(200);
    expect(response.body).to.deep.equal([...SCOPES].sort());
  });

  it('401 without a credential, with a wrong key, or with a forged or expired JWT', async () => {
    expect((await request('GET', '/v1/auth/me/api-keys')).status).to.equal(401);
    expect((await as('weft_sk_not-a-real-key').get('/v1/auth/me/api-keys')).status).to.equal(401);
    const { user_id, workspace_id } = await newTenant();
    const forged = await new SignJWT({ wid: workspace_id })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(user_id)
      .setIssuer('weft')
      .setAudience('weft-api')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode('another-secret-another-secret-another-secret'));
    const forgedResponse = await as(forged).get('/v1/auth/me/api-keys');
    expect(forgedResponse.status).to.equal(401);
    expect(forgedResponse.body).to.have.property('detail');
    const config = getStack().config;
    const expired = await new SignJWT({ wid: workspace_id })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(user_id)
      .setIssuer(config.JWT_ISSUER)
      .setAudience(config.JWT_AUDIENCE)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
      .sign(new TextEncoder().encode(config.JWT_SECRET));
    expect((await as(expired).get('/v1/auth/me/api-keys')).status).to.equal(401);
  });

  it('creates a key with a JWT: the token once, a prefix, no hash; unknown scopes dropped', async () => {
    const { user_jwt, workspace_id } = await newTenant();
    const created = await as(user_jwt).post('/v1/auth/me/api-keys', {
      name: 'ci',
      scopes: ['ontology:read', 'no:such-scope', 'ontology:read', 'search:read'],
    });
    expect(created.status).to.equal(201);
    expect(created.body.token).to.match(/^weft_sk_/);
    expect(created.body.token.startsWith(created.body.prefix)).to.equal(true);
    expect(created.body.prefix.length).to.be.lessThan(created.body.token.length / 2);
    expect(created.body.scopes).to.deep.equal(['ontology:read', 'search:read']);
    expect(created.body.workspace_id).to.equal(workspace_id);
    expect(created.body.revoked_at).to.equal(null);
    expect(created.text).not.to.match(/hash/);

    const fetched = await as(user_jwt).get(`/v1/auth/me/api-keys/${created.body.id}`);
    expect(fetched.status).to.equal(200);
    expect(fetched.body).not.to.have.property('token');
    expect(fetched.text).not.to.contain(created.body.token);

    // The new key works, and only within its scopes.
    expect((await as(created.body.token).get('/v1/ontology/config')).status).to.equal(200);
    const denied = await as(created.body.token).get('/v1/auth/me/api-keys');
    expect(denied.status).to.equal(403);
    expect(denied.body.detail).to.contain('api_keys:manage');
  });

  it('creates a key with an API key, but never with scopes the caller lacks (403)', async () => {
    const { user_jwt, api_key } = await newTenant();
    const viaKey = await as(api_key).post('/v1/auth/me/api-keys', {
      name: 'child',
      scopes: ['api_keys:manage', 'ontology:read'],
    });
    expect(viaKey.status).to.equal(201);
    const narrow = await as(user_jwt).post('/v1/auth/me/api-keys', { name: 'narrow', scopes: ['api_keys:manage'] });
    const escalate = await as(narrow.body.token).post('/v1/auth/me/api-keys', {
      name: 'wide',
      scopes: ['ontology:write'],
    });
    expect(escalate.status).to.equal(403);
  });

  it('404 when the key is for a workspace the caller cannot see', async () => {
    const mine = await newTenant();
    const other = await newTenant();
    const response = await as(mine.user_jwt).post('/v1/auth/me/api-keys', {
      name: 'x',
      scopes: [],
      workspace: other.workspace_id,
    });
    expect(response.status).to.equal(404);
  });

  it('a user JWT may create a key in a second workspace it belongs to; a key may not', async () => {
    const first = await newTenant();
    const second = await newTenant();
    const member = await getStack().provisioning.bootstrap({ workspaceId: second.workspace_id });
    // Make the first user a member of the second workspace through the owner connection.
    await getStack().ownerDataSource.query(
      `INSERT INTO memberships (workspace_id, user_id, role, is_default) VALUES ($1, $2, 'member', false)`,
      [second.workspace_id, first.user_id],
    );
    const viaJwt = await as(first.user_jwt).post('/v1/auth/me/api-keys', {
      name: 'second',
      scopes: [],
      workspace: second.workspace_id,
    });
    expect(viaJwt.status).to.equal(201);
    expect(viaJwt.body.workspace_id).to.equal(second.workspace_id);
    const viaKey = await as(first.api_key).post('/v1/auth/me/api-keys', {
      name: 'second',
      scopes: [],
      workspace: second.workspace_id,
    });
    expect(viaKey.status).to.equal(404);
    expect(member.workspace_id).to.equal(second.workspace_id);
  });

  it('lists only the caller’s keys, newest first, revoked included', async () => {
    const owner = await newTenant();
    const colleague = await newMember(owner.workspace_id);
    const a = await as(owner.user_jwt).post('/v1/auth/me/api-keys', { name: 'a', scopes: [] });
    const b = await as(owner.user_jwt).post('/v1/auth/me/api-keys', { name: 'b', scopes: [] });
    await as(owner.user_jwt).delete(`/v1/auth/me/api-keys/${a.body.id}`);
    const listed = await as(owner.user_jwt).get('/v1/auth/me/api-keys');
    const names = listed.body.map((row: { name: string }) => row.name);
    expect(names.slice(0, 2)).to.deep.equal(['b', 'a']);
    expect(listed.body.find((row: { id: string }) => row.id === a.body.id).revoked_at).to.be.a('string');
    expect(listed.body.find((row: { id: string }) => row.id === b.body.id).revoked_at).to.equal(null);

    const theirs = await as(colleague.user_jwt).get('/v1/auth/me/api-keys');
    expect(theirs.body.map((row: { id: string }) => row.id)).not.to.include(a.body.id);
    expect((await as(colleague.user_jwt).get(`/v1/auth/me/api-keys/${a.body.id}`)).status).to.equal(404);
    expect((await as(colleague.user_jwt).delete(`/v1/auth/me/api-keys/${b.body.id}`)).status).to.equal(404);
    expect((await as(colleague.user_jwt).get(`/v1/auth/me/api-keys/${b.body.id}/usage`)).status).to.equal(404);
    expect((await as(owner.user_jwt).get('/v1/auth/me/api-keys/00000000-0000-4000-8000-000000000000')).status).to.equal(
      404,
    );
  });

  it('revocation: the revoking request completes, the key’s next one is 401, revoking again is a no-op', async () => {
    const { user_jwt } = await newTenant();
    const created = await as(user_jwt).post('/v1/auth/me/api-keys', {
      name: 'short-lived',
      scopes: ['api_keys:manage'],
    });
    const key = created.body.token;
    const revoked = await as(key).delete(`/v1/auth/me/api-keys/${created.body.id}`);
    expect(revoked.status).to.equal(200);
    expect(revoked.body.revoked_at).to.be.a('string');
    expect((await as(key).get('/v1/auth/me/api-keys/scopes')).status).to.equal(401);
    const again = await as(user_jwt).delete(`/v1/auth/me/api-keys/${created.body.id}`);
    expect(again.status).to.equal(200);
    expect(again.body.revoked_at).to.equal(revoked.body.revoked_at);
  });

  it('a key stops working when its user leaves the workspace', async () => {
    const { api_key, user_id, workspace_id } = await newTenant();
    expect((await as(api_key).get('/v1/auth/me/api-keys/scopes')).status).to.equal(200);
    await getStack().ownerDataSource.query(`DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2`, [
      workspace_id,
      user_id,
    ]);
    expect((await as(api_key).get('/v1/auth/me/api-keys/scopes')).status).to.equal(401);
  });

  it('an expired key is refused', async () => {
    const { user_jwt } = await newTenant();
    const created = await as(user_jwt).post('/v1/auth/me/api-keys', { name: 'old', scopes: [], expires_in_days: 1 });
    await getStack().ownerDataSource.query(
      `UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`,
      [created.body.id],
    );
    expect((await as(created.body.token).get('/v1/auth/me/api-keys/scopes')).status).to.equal(401);
  });

  it('counts requests per key: total, daily series over the window, last_used_at', async () => {
    const { user_jwt } = await newTenant();
    const created = await as(user_jwt).post('/v1/auth/me/api-keys', { name: 'counted', scopes: ['ontology:read'] });
    for (let i = 0; i < 7; i += 1) await as(created.body.token).get('/v1/ontology/config');
    await as(created.body.token).get('/v1/auth/me/api-keys'); // 403, but authenticated: counted
    const usage = await as(user_jwt).get(`/v1/auth/me/api-keys/${created.body.id}/usage?days=7`);
    expect(usage.status).to.equal(200);
    expect(usage.body.total_requests).to.equal(8);
    expect(usage.body.days).to.equal(7);
    expect(usage.body.daily).to.have.length(7);
    const today = new Date().toISOString().slice(0, 10);
    expect(usage.body.daily.at(-1)).to.deep.equal({ date: today, requests: 8 });
    expect(usage.body.daily.slice(0, 6).every((day: { requests: number }) => day.requests === 0)).to.equal(true);
    expect(usage.body.last_used_at).to.be.a('string');
    expect((await as(user_jwt).get(`/v1/auth/me/api-keys/${created.body.id}/usage`)).body.daily).to.have.length(30);
  });

  it('a key bound to workspace A neither sees nor revokes the user’s keys in B; the user JWT sees both', async () => {
    const first = await newTenant();
    const second = await newTenant();
    await getStack().ownerDataSource.query(
      `INSERT INTO memberships (workspace_id, user_id, role, is_default) VALUES ($1, $2, 'member', false)`,
      [second.workspace_id, first.user_id],
    );
    const elsewhere = await as(first.user_jwt).post('/v1/auth/me/api-keys', {
      name: 'second workspace',
      scopes: ['ontology:read'],
      workspace: second.workspace_id,
    });
    const manager = await as(first.user_jwt).post('/v1/auth/me/api-keys', {
      name: 'manager',
      scopes: ['api_keys:manage'],
    });
    const bound = as(manager.body.token);

    const listed = await bound.get('/v1/auth/me/api-keys');
    expect(listed.status).to.equal(200);
    expect(listed.body.map((row: { workspace_id: string }) => row.workspace_id)).to.include(first.workspace_id);
    expect(listed.body.every((row: { workspace_id: string }) => row.workspace_id === first.workspace_id)).to.equal(
      true,
    );
    for (const path of ['', '/usage']) {
      expect((await bound.get(`/v1/auth/me/api-keys/${elsewhere.body.id}${path}`)).status, path).to.equal(404);
    }
    expect((await bound.delete(`/v1/auth/me/api-keys/${elsewhere.body.id}`)).status).to.equal(404);
    expect((await as(elsewhere.body.token).get('/v1/ontology/config')).status).to.equal(200);

    const everything = await as(first.user_jwt).get('/v1/auth/me/api-keys');
    expect(everything.body.map((row: { id: string }) => row.id)).to.include.members([
      elsewhere.body.id,
      manager.body.id,
    ]);
  });

  it('a key that expires cannot make one that outlives it: the child’s expiry is capped at its parent’s', async () => {
    const { user_jwt } = await newTenant();
    const parent = await as(user_jwt).post('/v1/auth/me/api-keys', {
      name: 'expiring',
      scopes: ['api_keys:manage', 'ontology:read'],
      expires_in_days: 2,
    });
    const parentExpiry = Date.parse(parent.body.expires_at);
    const forever = await as(parent.body.token).post('/v1/auth/me/api-keys', { name: 'forever', scopes: [] });
    expect(forever.status).to.equal(201);
    expect(Date.parse(forever.body.expires_at)).to.equal(parentExpiry);
    const longer = await as(parent.body.token).post('/v1/auth/me/api-keys', {
      name: 'longer',
      scopes: [],
      expires_in_days: 3650,
    });
    expect(Date.parse(longer.body.expires_at)).to.equal(parentExpiry);
    const shorter = await as(parent.body.token).post('/v1/auth/me/api-keys', {
      name: 'shorter',
      scopes: [],
      expires_in_days: 1,
    });
    expect(Date.parse(shorter.body.expires_at)).to.be.below(parentExpiry);
    // A user JWT stands for the user: it may still create a key that never expires.
    const userKey = await as(user_jwt).post('/v1/auth/me/api-keys', { name: 'service', scopes: [] });
    expect(userKey.body.expires_at).to.equal(null);
  });

  it('a user JWT without a jti (one that could never be revoked) is refused', async () => {
    const { user_id, workspace_id } = await newTenant();
    const config = getStack().config;
    const unrevocable = await new SignJWT({ wid: workspace_id })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(user_id)
      .setIssuer(config.JWT_ISSUER)
      .setAudience(config.JWT_AUDIENCE)
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(config.JWT_SECRET));
    expect((await as(unrevocable).get('/v1/auth/me/api-keys')).status).to.equal(401);
  });

  it('a workspace_id parameter must name a workspace the caller belongs to (404 otherwise)', async () => {
    const mine = await newTenant();
    const other = await newTenant();
    expect((await as(mine.api_key).get(`/v1/ontology/config?workspace_id=${mine.workspace_id}`)).status).to.equal(200);
    expect((await as(mine.api_key).get(`/v1/ontology/config?workspace_id=${other.workspace_id}`)).status).to.equal(404);
    expect((await as(mine.user_jwt).get(`/v1/ontology/config?workspace_id=${other.workspace_id}`)).status).to.equal(
      404,
    );
  });
});

describe('workspace_id parameter', () => {
  it('422 when it is not a uuid, before anything else runs', async () => {
    const { api_key } = await newTenant();
    const response = await as(api_key).get('/v1/ontology/config?workspace_id=abc');
    expect(response.status).to.equal(422);
    expect(response.body.detail[0].loc).to.deep.equal(['query', 'workspace_id']);
  });
});
