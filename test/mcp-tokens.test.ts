import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { newMember, newTenant } from './helpers/tenants';

describe('MCP tokens (4.3)', () => {
  it('mints an MCP-audience JWT that authenticates as its user in that workspace', async () => {
    const { user_jwt, user_id, workspace_id } = await newTenant();
    const minted = await as(user_jwt).post('/v1/mcp/token', { workspace_id, expires_in_days: 2 });
    expect(minted.status).to.equal(201);
    expect(minted.body).to.include({ token_type: 'Bearer', workspace_id });
    const claims = decodeJwt(minted.body.token);
    expect(claims.aud).to.equal(getStack().config.MCP_JWT_AUDIENCE);
    expect(claims.sub).to.equal(user_id);
    expect(minted.body.expires_in).to.be.within(2 * 86400 - 60, 2 * 86400);
    expect((await as(minted.body.token).get('/v1/ontology/config')).status).to.equal(200);
    // An MCP token acts through agent tooling; it cannot manage credentials.
    expect((await as(minted.body.token).get('/v1/auth/me/api-keys')).status).to.equal(403);
  });

  it('never holds more than its creator: a key with only mcp_tokens:manage mints a token of nothing else', async () => {
    const { user_jwt, workspace_id } = await newTenant();
    const narrow = await as(user_jwt).post('/v1/auth/me/api-keys', { name: 'minter', scopes: ['mcp_tokens:manage'] });
    const minted = await as(narrow.body.token).post('/v1/mcp/token', { workspace_id });
    expect(minted.status).to.equal(201);
    expect((await as(minted.body.token).get('/v1/ontology/config')).status).to.equal(403);
    const listed = await as(user_jwt).get(`/v1/workspaces/${workspace_id}/mcp-tokens`);
    expect(listed.body[0].scopes).to.deep.equal([]);
  });

  it('a token made by an expiring key expires with it, however many days it asks for', async () => {
    const { user_jwt, workspace_id } = await newTenant();
    const parent = await as(user_jwt).post('/v1/auth/me/api-keys', {
      name: 'expiring minter',
      scopes: ['mcp_tokens:manage', 'ontology:read'],
      expires_in_days: 1,
    });
    const parentExpiry = Date.parse(parent.body.expires_at);
    const minted = await as(parent.body.token).post('/v1/mcp/token', { workspace_id, expires_in_days: 365 });
    expect(minted.status).to.equal(201);
    expect(Date.parse(minted.body.expires_at)).to.equal(parentExpiry);
    expect(minted.body.expires_in).to.be.at.most(86_400);
    expect(decodeJwt(minted.body.token).exp).to.equal(Math.floor(parentExpiry / 1000));
    const named = await as(parent.body.token).post(`/v1/workspaces/${workspace_id}/mcp-tokens`, { name: 'agent' });
    expect(Date.parse(named.body.expires_at)).to.equal(parentExpiry);
    // A user JWT is not capped: its tokens get the days they ask for.
    const fromUser = await as(user_jwt).post('/v1/mcp/token', { workspace_id, expires_in_days: 365 });
    expect(fromUser.body.expires_in).to.be.above(364 * 86_400);
  });

  it('404 when the workspace is missing or the caller is not a member', async () => {
    const { user_jwt } = await newTenant();
    const other = await newTenant();
    expect((await as(user_jwt).post('/v1/mcp/token', { workspace_id: other.workspace_id })).status).to.equal(404);
    expect(
      (await as(user_jwt).post('/v1/mcp/token', { workspace_id: '00000000-0000-4000-8000-000000000000' })).status,
    ).to.equal(404);
    expect((await as(user_jwt).post(`/v1/workspaces/${other.workspace_id}/mcp-tokens`, { name: 'x' })).status).to.equal(
      404,
    );
    expect((await as(user_jwt).get(`/v1/workspaces/${other.workspace_id}/mcp-tokens`)).status).to.equal(404);
  });

  it('422 for a bad body', async () => {
    const { user_jwt, workspace_id } = await newTenant();
    expect((await as(user_jwt).post('/v1/mcp/token', { workspace_id: 'nope' })).status).to.equal(422);
    expect((await as(user_jwt).post('/v1/mcp/token', { workspace_id, expires_in_days: 0 })).status).to.equal(422);
    expect((await as(user_jwt).post(`/v1/workspaces/${workspace_id}/mcp-tokens`, { name: '' })).status).to.equal(422);
  });

  it('limits minting to 60 per minute per user (429 with Retry-After), not per workspace', async function () {
    this.timeout(60_000);
    const { user_jwt, workspace_id } = await newTenant();
    const colleague = await newMember(workspace_id);
    const statuses = await Promise.all(
      Array.from({ length: 61 }, () =>
        as(user_jwt)
          .post('/v1/mcp/token', { workspace_id })
          .then((r) => r.status),
      ),
    );
    expect(statuses.filter((status) => status === 201)).to.have.length(60);
    const limited = await as(user_jwt).post('/v1/mcp/token', { workspace_id });
    expect(limited.status).to.equal(429);
    expect(Number(limited.headers.get('retry-after'))).to.be.within(1, 60);
    expect(limited.body).to.have.property('detail');
    expect((await as(colleague.user_jwt).post('/v1/mcp/token', { workspace_id })).status).to.equal(201);
  });

  it('creates named tokens once, lists only the owner’s (newest first, revoked and expired included)', async () => {
    const owner = await newTenant();
    const colleague = await newMember(owner.workspace_id);
    const base = `/v1/workspaces/${owner.workspace_id}/mcp-tokens`;
    const first = await as(owner.user_jwt).post(base, { name: 'claude', expires_in_days: 1 });
    expect(first.status).to.equal(201);
    expect(first.body).to.include({ name: 'claude', kind: 'mcp_token', workspace_id: owner.workspace_id });
    expect(first.body.token).to.be.a('string');
    const second = await as(owner.user_jwt).post(base, { name: 'cursor' });
    await getStack().ownerDataSource.query(
      `UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1`,
      [first.body.id],
    );
    await as(colleague.user_jwt).post(base, { name: 'theirs' });

    const listed = await as(owner.user_jwt).get(base);
    expect(listed.status).to.equal(200);
    expect(listed.body.map((row: { name: string }) => row.name)).to.deep.equal(['cursor', 'claude']);
    expect(listed.text).not.to.contain(second.body.token);
    expect((await as(first.body.token).get('/v1/ontology/config')).status).to.equal(401);
  });

  it('revocation is owner-only and idempotent (204), effective from the next request', async () => {
    const owner = await newTenant();
    const colleague = await newMember(owner.workspace_id);
    const other = await newTenant();
    const base = `/v1/workspaces/${owner.workspace_id}/mcp-tokens`;
    const created = await as(owner.user_jwt).post(base, { name: 'agent' });
    expect((await as(created.body.token).get('/v1/ontology/config')).status).to.equal(200);

    expect((await as(colleague.user_jwt).delete(`${base}/${created.body.id}`)).status).to.equal(404);
    expect((await as(owner.user_jwt).delete(`${base}/00000000-0000-4000-8000-000000000000`)).status).to.equal(404);
    // An API key id is not an MCP token.
    const key = await as(owner.user_jwt).post('/v1/auth/me/api-keys', { name: 'k', scopes: [] });
    expect((await as(owner.user_jwt).delete(`${base}/${key.body.id}`)).status).to.equal(404);
    // The right token under another workspace's path is not found either.
    expect(
      (await as(other.user_jwt).delete(`/v1/workspaces/${other.workspace_id}/mcp-tokens/${created.body.id}`)).status,
    ).to.equal(404);

    const revoked = await as(owner.user_jwt).delete(`${base}/${created.body.id}`);
    expect(revoked.status).to.equal(204);
    expect(revoked.text).to.equal('');
    expect((await as(owner.user_jwt).delete(`${base}/${created.body.id}`)).status).to.equal(204);
    expect((await as(created.body.token).get('/v1/ontology/config')).status).to.equal(401);
    const listed = await as(owner.user_jwt).get(base);
    expect(listed.body[0].revoked_at).to.be.a('string');
  });

  it('a token minted for one workspace cannot be pointed at another', async () => {
    const owner = await newTenant();
    const minted = await as(owner.user_jwt).post('/v1/mcp/token', { workspace_id: owner.workspace_id });
    const other = await newTenant();
    const response = await as(minted.body.token).get(`/v1/ontology/config?workspace_id=${other.workspace_id}`);
    expect(response.status).to.equal(404);
  });
});
