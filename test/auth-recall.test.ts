import { expect } from 'chai';
import { Client } from 'pg';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

const NODES = '/v1/ontology/nodes';

/**
 * Counts the messages this process sends to Postgres that authenticate or read in a scope while
 * `work` runs (other traffic of the shared stack, the outbox relay's, is left out).
 */
async function messagesOf(work: () => Promise<void>): Promise<number> {
  let count = 0;
  const original = Client.prototype.query;
  Client.prototype.query = function (this: Client, ...args: unknown[]) {
    const text = typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string })?.text ?? '');
    if (/weft_authenticate_|weft_scoped_read/.test(text)) count++;
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  try {
    await work();
  } finally {
    Client.prototype.query = original;
  }
  return count;
}

// A read may start from the principal its credential was found to be on its last request; the
// credential's lookup still runs for every request, in the read's own statement (issue 27).
describe('authentication: a read proves its credential in its own statement', () => {
  it('a warm read of a node is one message to Postgres, and answers as before', async () => {
    const { api_key, workspace_id } = await newTenant();
    const node = (await as(api_key).post(NODES, { type: 'person', name: 'Grace' })).body;
    const first = await as(api_key).get(`${NODES}/${node.id}`);
    expect(first.status).to.equal(200);
    let again: { status: number; body: Record<string, unknown> } | undefined;
    const messages = await messagesOf(async () => {
      again = await as(api_key).get(`${NODES}/${node.id}`);
    });
    expect(messages).to.equal(1);
    expect(again!.status).to.equal(200);
    expect(again!.body).to.deep.equal(first.body);
    expect(again!.body.workspace_id).to.equal(workspace_id);
    const list = await as(api_key).get(`${NODES}?type=person&limit=50`);
    expect(list.status).to.equal(200);
    expect(JSON.stringify(list.body)).to.include(node.id);
  });

  it('a key revoked by another connection is refused on its very next read (401, no data)', async () => {
    const { api_key, workspace_id } = await newTenant();
    const node = (await as(api_key).post(NODES, { type: 'person', name: 'Secret' })).body;
    expect((await as(api_key).get(`${NODES}/${node.id}`)).status).to.equal(200);
    await getStack().ownerDataSource.query(
      `UPDATE api_keys SET revoked_at = now() WHERE workspace_id = $1 AND kind = 'api_key'`,
      [workspace_id],
    );
    const read = await as(api_key).get(`${NODES}/${node.id}`);
    expect(read.status).to.equal(401);
    expect(JSON.stringify(read.body)).to.not.include('Secret');
    const list = await as(api_key).get(`${NODES}?type=person`);
    expect(list.status).to.equal(401);
    // A missing node does not answer 404 to a refused credential either.
    expect((await as(api_key).get(`${NODES}/00000000-0000-4000-8000-000000000000`)).status).to.equal(401);
  });

  it('a warm key whose user left the workspace is refused on the next read', async () => {
    const { api_key, user_id, workspace_id } = await newTenant();
    const node = (await as(api_key).post(NODES, { type: 'person', name: 'Leaver' })).body;
    expect((await as(api_key).get(`${NODES}/${node.id}`)).status).to.equal(200);
    await getStack().ownerDataSource.query(`DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2`, [
      workspace_id,
      user_id,
    ]);
    expect((await as(api_key).get(`${NODES}/${node.id}`)).status).to.equal(401);
  });

  it('a live warm key still gets its 404 for a missing node, and a revoked user JWT its 401', async () => {
    const { api_key, user_jwt } = await newTenant();
    const missing = `${NODES}/00000000-0000-4000-8000-000000000000`;
    expect((await as(api_key).get(missing)).status).to.equal(404);
    expect((await as(api_key).get(missing)).status).to.equal(404);
    expect((await as(user_jwt).get(missing)).status).to.equal(404);
    const { jti } = JSON.parse(Buffer.from(user_jwt.split('.')[1]!, 'base64url').toString('utf8'));
    await getStack().ownerDataSource.query(
      `INSERT INTO revoked_tokens (jti, expires_at) VALUES ($1, now() + interval '1 hour')`,
      [jti],
    );
    expect((await as(user_jwt).get(missing)).status).to.equal(401);
  });
});
