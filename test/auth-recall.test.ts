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
  return (await textsOf(work)).filter((text) => /weft_authenticate_|weft_scoped_read/.test(text)).length;
}

/** The text of every message this process sends to Postgres while `work` runs. */
async function textsOf(work: () => Promise<void>): Promise<string[]> {
  const texts: string[] = [];
  const original = Client.prototype.query;
  Client.prototype.query = function (this: Client, ...args: unknown[]) {
    texts.push(typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string })?.text ?? ''));
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  try {
    await work();
  } finally {
    Client.prototype.query = original;
  }
  return texts;
}

const START_SESSION = '/v1/cap/agent.start_session';
/** How many rows of `table` the workspace has, read as the owner (past RLS). */
const rowsIn = async (table: 'agent_sessions' | 'run_executions', workspaceId: string): Promise<number> =>
  Number(
    (
      await getStack().ownerDataSource.query(`SELECT count(*) AS n FROM ${table} WHERE workspace_id = $1`, [
        workspaceId,
      ])
    )[0].n,
  );
const sessionsOf = (workspaceId: string) => rowsIn('agent_sessions', workspaceId);

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

  it('a warm read that sends nothing to Postgres proves its credential alone before it answers', async () => {
    const { api_key, workspace_id } = await newTenant();
    expect((await as(api_key).get('/v1/cap')).status).to.equal(200);
    let status = 0;
    const texts = await textsOf(async () => {
      status = (await as(api_key).get('/v1/cap')).status;
    });
    expect(status).to.equal(200);
    expect(texts.filter((text) => text.includes('weft_authenticate_'))).to.deep.equal([
      'SELECT * FROM weft_authenticate_key($1)',
    ]);
    await getStack().ownerDataSource.query(
      `UPDATE api_keys SET revoked_at = now() WHERE workspace_id = $1 AND kind = 'api_key'`,
      [workspace_id],
    );
    const refused = await as(api_key).get('/v1/cap');
    expect(refused.status).to.equal(401);
    expect(JSON.stringify(refused.body)).to.not.include('tools');
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

// A capability call may start from a remembered principal too: its scoped reads carry the lookup,
// and its units of work carry it in their first message and write nothing before it answered.
describe('authentication: a warm capability call proves its credential before it writes', () => {
  const warm = async (key: string) => expect((await as(key).get('/v1/cap')).status).to.equal(200);

  it('a replay by Idempotency-Key is one message to Postgres, and answers the stored envelope', async () => {
    const { api_key } = await newTenant();
    const headers = { 'Idempotency-Key': 'recall-replay-1' };
    const first = await as(api_key).post(START_SESSION, { name: 'replayer' }, headers);
    expect(first.status).to.equal(200);
    let again: { status: number; body: unknown; headers: Headers } | undefined;
    const messages = await messagesOf(async () => {
      again = await as(api_key).post(START_SESSION, { name: 'replayer' }, headers);
    });
    expect(messages).to.equal(1);
    expect(again!.status).to.equal(200);
    expect(again!.headers.get('idempotent-replayed')).to.equal('true');
    expect(again!.body).to.deep.equal(first.body);
  });

  it('a warm write sends its credential lookup in its transaction’s first message', async () => {
    const { api_key, workspace_id } = await newTenant();
    await warm(api_key);
    let status = 0;
    const texts = await textsOf(async () => {
      status = (await as(api_key).post(START_SESSION, { name: 'one-trip' })).status;
    });
    expect(status).to.equal(200);
    const lookups = texts.filter((text) => text.includes('weft_authenticate_'));
    expect(lookups).to.have.length(1);
    expect(lookups[0]).to.match(/^BEGIN; SELECT \* FROM weft_authenticate_key\(/);
    expect(await sessionsOf(workspace_id)).to.equal(1);
  });

  it('a warm key revoked by another connection writes nothing: 401, no row, no stored answer', async () => {
    const { api_key, workspace_id } = await newTenant();
    await warm(api_key);
    await getStack().ownerDataSource.query(
      `UPDATE api_keys SET revoked_at = now() WHERE workspace_id = $1 AND kind = 'api_key'`,
      [workspace_id],
    );
    const refused = await as(api_key).post(START_SESSION, { name: 'revoked' }, { 'Idempotency-Key': 'rv-1' });
    expect(refused.status).to.equal(401);
    expect(refused.headers.get('idempotency-key')).to.equal(null);
    expect(await sessionsOf(workspace_id)).to.equal(0);
    const stored = await getStack().ownerDataSource.query(
      `SELECT count(*) AS n FROM capability_idempotency_keys WHERE workspace_id = $1`,
      [workspace_id],
    );
    expect(Number(stored[0].n)).to.equal(0);
  });

  it('a warm key that lost the scope meanwhile is answered 403 and writes nothing', async () => {
    const { api_key, workspace_id } = await newTenant();
    await warm(api_key);
    await getStack().ownerDataSource.query(
      `UPDATE api_keys SET scopes = array_remove(scopes, 'capabilities:write')
       WHERE workspace_id = $1 AND kind = 'api_key'`,
      [workspace_id],
    );
    const refused = await as(api_key).post(START_SESSION, { name: 'narrowed' });
    expect(refused.status).to.equal(403);
    expect(await sessionsOf(workspace_id)).to.equal(0);
  });

  it('a warm key whose user left the workspace writes nothing', async () => {
    const { api_key, user_id, workspace_id } = await newTenant();
    await warm(api_key);
    await getStack().ownerDataSource.query(`DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2`, [
      workspace_id,
      user_id,
    ]);
    expect((await as(api_key).post(START_SESSION, { name: 'leaver' })).status).to.equal(401);
    expect(await sessionsOf(workspace_id)).to.equal(0);
  });
});

describe('authentication: a warm run dispatch proves its credential before it writes', () => {
  const dispatch = (key: string) =>
    as(key).post('/v1/runs', { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance' }] } });
  const runsOf = (workspaceId: string) => rowsIn('run_executions', workspaceId);

  it('a warm dispatch sends its lookup in its first message; a revoked key then dispatches nothing', async () => {
    const { api_key, workspace_id } = await newTenant();
    expect((await as(api_key).get('/v1/runs')).status).to.equal(200);
    let status = 0;
    const texts = await textsOf(async () => {
      status = (await dispatch(api_key)).status;
    });
    expect(status).to.equal(202);
    const lookups = texts.filter((text) => text.includes('weft_authenticate_'));
    expect(lookups).to.have.length(1);
    expect(lookups[0]).to.match(/^BEGIN; SELECT \* FROM weft_authenticate_key\(/);
    expect(await runsOf(workspace_id)).to.equal(1);

    await getStack().ownerDataSource.query(
      `UPDATE api_keys SET revoked_at = now() WHERE workspace_id = $1 AND kind = 'api_key'`,
      [workspace_id],
    );
    expect((await dispatch(api_key)).status).to.equal(401);
    expect(await runsOf(workspace_id)).to.equal(1);
  });
});

describe('authentication: a warm MCP call proves its credential as POST /v1/cap does', () => {
  const warm = async (key: string) => expect((await as(key).get('/v1/cap')).status).to.equal(200);
  /** One JSON-RPC tools/call, as an MCP client sends it. */
  const toolCall = (key: string, name: string, args: Record<string, unknown>) =>
    as(key).post(
      '/mcp',
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
      { accept: 'application/json, text/event-stream' },
    );

  it('a warm read tool is one message to Postgres, and answers as before', async () => {
    const { api_key } = await newTenant();
    const node = (await as(api_key).post(NODES, { type: 'person', name: 'Warm Reader' })).body;
    await warm(api_key);
    let answer: any;
    const messages = await messagesOf(async () => {
      answer = await toolCall(api_key, 'ontology_get_node', { node_id: node.id });
    });
    expect(messages).to.equal(1);
    expect(answer.status).to.equal(200);
    expect(answer.body.result.structuredContent.node).to.deep.equal(node);
  });

  it('a warm key revoked by another connection is 401 and writes nothing', async () => {
    const { api_key, workspace_id } = await newTenant();
    await warm(api_key);
    await getStack().ownerDataSource.query(
      `UPDATE api_keys SET revoked_at = now() WHERE workspace_id = $1 AND kind = 'api_key'`,
      [workspace_id],
    );
    expect((await toolCall(api_key, 'agent_start_session', { name: 'revoked' })).status).to.equal(401);
    expect(await sessionsOf(workspace_id)).to.equal(0);
  });

  it('a warm key that lost the scope meanwhile is refused the tool (403) and writes nothing', async () => {
    const { api_key, workspace_id } = await newTenant();
    await warm(api_key);
    await getStack().ownerDataSource.query(
      `UPDATE api_keys SET scopes = array_remove(scopes, 'capabilities:write')
       WHERE workspace_id = $1 AND kind = 'api_key'`,
      [workspace_id],
    );
    const refused = await toolCall(api_key, 'agent_start_session', { name: 'narrowed' });
    expect(refused.status).to.equal(200);
    expect(refused.body.result.isError).to.equal(true);
    expect(refused.body.result._meta['weft/error'].status).to.equal(403);
    expect(await sessionsOf(workspace_id)).to.equal(0);
  });
});
