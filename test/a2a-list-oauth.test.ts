import { createHash, randomBytes } from 'node:crypto';
import type { ListTasksRequest } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { a2aClient } from './helpers/a2a';
import { as, postForm, request } from './helpers/http';
import { finished, pendingApproval } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

// Issue 42 item 2, the rest of it: A2A 1.0 ListTasks, and OAuth access tokens for the /a2a resource
// (RFC 8707: a token is for one resource, /mcp or /a2a, and refused at the other).

const list = (params: Partial<ListTasksRequest> = {}): ListTasksRequest => ({
  tenant: '',
  contextId: '',
  status: TaskState.TASK_STATE_UNSPECIFIED,
  pageToken: '',
  statusTimestampAfter: undefined,
  ...params,
});

const oneStep = (requiresApproval = false) => ({
  agent: 'playbook',
  input: { steps: [{ tool: 'billing.credits_balance', input: {}, requires_approval: requiresApproval }] },
});

const form = (path: string, body: Record<string, string>) => postForm(getStack().baseUrl, path, body);

const getJson = async (path: string) => {
  const response = await fetch(`${getStack().baseUrl}${path}`);
  return { status: response.status, body: (await response.json()) as any };
};

/** A person's consent for a client asking for `resource`, then the code's exchange: the token answer. */
async function oauthToken(
  tenant: { user_jwt: string; workspace_id: string },
  resource: string,
  exchangeFor = resource,
) {
  const redirect = 'http://127.0.0.1:43112/cb';
  const registered = await fetch(`${getStack().baseUrl}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'A2A client', redirect_uris: [redirect] }),
  }).then((response) => response.json() as Promise<{ client_id: string }>);
  const verifier = randomBytes(32).toString('base64url');
  const consent = await as(tenant.user_jwt).post('/v1/oauth/consent', {
    client_id: registered.client_id,
    redirect_uri: redirect,
    response_type: 'code',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    resource,
    workspace_id: tenant.workspace_id,
    decision: 'approve',
  });
  expect(consent.status, consent.text).to.equal(200);
  return form('/oauth/token', {
    grant_type: 'authorization_code',
    code: new URL(consent.body.redirect_to).searchParams.get('code')!,
    client_id: registered.client_id,
    redirect_uri: redirect,
    code_verifier: verifier,
    resource: exchangeFor,
  });
}

const listToolsStatus = async (token: string) =>
  (
    await as(token).post(
      '/mcp',
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { accept: 'application/json, text/event-stream' },
    )
  ).status;

describe('A2A ListTasks and OAuth tokens for /a2a (issue 42 item 2)', function () {
  this.timeout(60_000);

  afterEach(() =>
    getStack().ownerDataSource.query(
      `DELETE FROM oauth_clients WHERE registered_from IN ('127.0.0.1', '::ffff:127.0.0.1')`,
    ),
  );

  it('lists the workspace’s runs as tasks, newest first, paged, filtered by state; never another’s', async () => {
    const tenant = await newTenant(10);
    const api = as(tenant.api_key);
    const ids: string[] = [];
    for (const gated of [false, false, true]) ids.push((await api.post('/v1/runs', oneStep(gated))).body.execution_id);
    await finished(api, ids[0]!);
    await finished(api, ids[1]!);
    await pendingApproval(api, ids[2]!);
    const stranger = await newTenant();
    await as(stranger.api_key).post('/v1/runs', oneStep());

    const client = await a2aClient(tenant.api_key);
    const first = await client.listTasks(list({ pageSize: 2 }));
    expect(first.tasks.map((task) => task.id)).to.deep.equal([ids[2], ids[1]]);
    expect(first.tasks[0]!.status!.state).to.equal(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(first.tasks[1]!.status!.state).to.equal(TaskState.TASK_STATE_COMPLETED);
    expect(first.nextPageToken).to.not.equal('');
    const second = await client.listTasks(list({ pageSize: 2, pageToken: first.nextPageToken }));
    expect(second.tasks.map((task) => task.id)).to.deep.equal([ids[0]]);
    expect(second.nextPageToken).to.equal('');

    const waiting = await client.listTasks(list({ status: TaskState.TASK_STATE_INPUT_REQUIRED }));
    expect(waiting.tasks.map((task) => task.id)).to.deep.equal([ids[2]]);
    const done = await client.listTasks(list({ status: TaskState.TASK_STATE_COMPLETED, includeArtifacts: true }));
    expect(done.tasks.map((task) => task.id)).to.deep.equal([ids[1], ids[0]]);
    expect(done.tasks[0]!.artifacts.map((artifact) => artifact.artifactId)).to.include('answer');

    const theirs = await (await a2aClient(stranger.api_key)).listTasks(list());
    expect(theirs.tasks).to.have.length(1);
    expect(ids).to.not.include(theirs.tasks[0]!.id);
    await api.post(`/v1/runs/${ids[2]}/cancel`);
  });

  it('issues OAuth tokens for /a2a, accepted there only; a /mcp token is refused at /a2a', async () => {
    const { baseUrl } = getStack();
    const tenant = await newTenant(5);
    // Discovery: the protected-resource metadata of /a2a, the server's resources, the 401's pointer, the card.
    const metadata = await getJson('/.well-known/oauth-protected-resource/a2a');
    expect(metadata.body).to.include({ resource: `${baseUrl}/a2a`, resource_name: 'Weft A2A agent' });
    expect(metadata.body.authorization_servers).to.deep.equal([baseUrl]);
    const server = await getJson('/.well-known/oauth-authorization-server');
    expect(server.body.protected_resources).to.deep.equal([`${baseUrl}/mcp`, `${baseUrl}/a2a`]);
    const bare = await request('POST', '/a2a', { body: { jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} } });
    expect(bare.status).to.equal(401);
    expect(bare.headers.get('www-authenticate')).to.contain(
      `resource_metadata="${baseUrl}/.well-known/oauth-protected-resource/a2a"`,
    );
    const card = await (await a2aClient(tenant.api_key)).getAgentCard();
    const oauth = card.securitySchemes.oauth?.scheme;
    expect(oauth?.$case).to.equal('oauth2SecurityScheme');
    if (oauth?.$case !== 'oauth2SecurityScheme') throw new Error('no OAuth scheme');
    expect(oauth.value.oauth2MetadataUrl).to.equal(`${baseUrl}/.well-known/oauth-authorization-server`);
    expect(oauth.value.flows?.flow?.$case).to.equal('authorizationCode');

    // A grant for /a2a: its token names /a2a, and the SDK's client works with it.
    const issued = await oauthToken(tenant, `${baseUrl}/a2a`);
    expect(issued.status, JSON.stringify(issued.body)).to.equal(200);
    const a2aToken: string = issued.body.access_token;
    expect(decodeJwt(a2aToken).aud).to.deep.equal([getStack().config.MCP_JWT_AUDIENCE, `${baseUrl}/a2a`]);
    const dispatched = await as(tenant.api_key).post('/v1/runs', oneStep());
    await finished(as(tenant.api_key), dispatched.body.execution_id);
    const viaOAuth = await a2aClient(a2aToken);
    expect((await viaOAuth.listTasks(list())).tasks.map((task) => task.id)).to.deep.equal([
      dispatched.body.execution_id,
    ]);
    const task = await viaOAuth.getTask({ tenant: '', id: dispatched.body.execution_id, historyLength: undefined });
    expect(task.status!.state).to.equal(TaskState.TASK_STATE_COMPLETED);
    // …and nowhere else: not /mcp, not REST.
    expect(await listToolsStatus(a2aToken)).to.equal(401);
    const rest = await as(a2aToken).get('/v1/runs');
    expect(rest.status).to.equal(401);
    expect(rest.body.detail).to.match(/issued for .*\/a2a only/);

    // A /mcp token is refused at /a2a, and works at /mcp.
    const mcpIssued = await oauthToken(tenant, `${baseUrl}/mcp`);
    expect(await listToolsStatus(mcpIssued.body.access_token)).to.equal(200);
    const refused = await as(mcpIssued.body.access_token).post('/a2a', {
      jsonrpc: '2.0',
      id: 1,
      method: 'ListTasks',
      params: {},
    });
    expect(refused.status).to.equal(401);
    expect(refused.body.detail).to.match(/issued for .*\/mcp only/);

    // A grant is for one resource: its code is not exchanged for the other, nor an unknown one granted.
    const crossed = await oauthToken(tenant, `${baseUrl}/a2a`, `${baseUrl}/mcp`);
    expect(crossed.status).to.equal(400);
    expect(crossed.body.error).to.equal('invalid_target');
  });
});
