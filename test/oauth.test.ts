import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import Koa from 'koa';
import { OAuthError } from '../src/oauth/clients';
import { oauthMiddleware } from '../src/oauth/protocol';
import { MCP_TOKEN_SCOPES } from '../src/platform/auth/scopes';
import { LIMITS } from '../src/rules/limits';
import { as, postForm, request } from './helpers/http';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

/** An MCP client's OAuth state, kept in memory; the "browser" is the test, which records where it was sent. */
class ScriptedProvider implements OAuthClientProvider {
  information?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  sentTo?: URL;
  constructor(readonly redirectUrl = 'http://127.0.0.1:43110/callback') {}
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Scripted MCP client',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state = () => 'state-123';
  clientInformation = () => this.information;
  saveClientInformation = (information: OAuthClientInformationMixed) => {
    this.information = information;
  };
  tokens = () => this.saved;
  saveTokens = (tokens: OAuthTokens) => {
    this.saved = tokens;
  };
  redirectToAuthorization = (url: URL) => {
    this.sentTo = url;
  };
  saveCodeVerifier = (verifier: string) => {
    this.verifier = verifier;
  };
  codeVerifier = () => this.verifier;
}

const mcpUrl = () => `${getStack().baseUrl}/mcp`;

/** What a browser does with the authorization URL: follow it to the console, where the person approves. */
async function playBrowser(authorizationUrl: URL, userJwt: string, workspaceId: string) {
  const first = await fetch(authorizationUrl, { redirect: 'manual' });
  expect(first.status).to.equal(302);
  const consentPage = new URL(first.headers.get('location')!, getStack().baseUrl);
  expect(consentPage.pathname).to.equal('/console/oauth');
  const page = await fetch(consentPage);
  expect(page.status).to.equal(200);
  const params = Object.fromEntries(consentPage.searchParams);
  const consent = await as(userJwt).post('/v1/oauth/consent', {
    ...params,
    workspace_id: workspaceId,
    decision: 'approve',
  });
  expect(consent.status).to.equal(200);
  return { redirectTo: new URL(consent.body.redirect_to), grantId: consent.body.grant_id as string };
}

async function callTool(provider: ScriptedProvider, name: string) {
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl()), { authProvider: provider });
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(transport);
  try {
    return (await client.callTool({ name, arguments: {} })) as CallToolResult;
  } finally {
    await client.close();
  }
}

const form = (path: string, body: Record<string, string>) => postForm(getStack().baseUrl, path, body);

/** The OAuth protocol endpoints speak OAuth, not the API, and are not in its OpenAPI document: plain fetch. */
async function oauthCall(method: 'GET' | 'POST', path: string, body?: unknown) {
  const response = await fetch(`${getStack().baseUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

/** `tools/list` with a bearer token, as an MCP client sends it. */
const listTools = (token: string) =>
  as(token).post(
    '/mcp',
    { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    { accept: 'application/json, text/event-stream' },
  );

const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

/** A client registered by hand and a code approved for it, for the refusals. */
async function approvedCode(overrides: Record<string, string> = {}) {
  const tenant = await newTenant();
  const redirect = 'http://127.0.0.1:43111/cb';
  const registered = await oauthCall('POST', '/oauth/register', { client_name: 'by hand', redirect_uris: [redirect] });
  expect(registered.status).to.equal(201);
  const clientId = registered.body.client_id as string;
  const { verifier, challenge } = pkce();
  const consent = await as(tenant.user_jwt).post('/v1/oauth/consent', {
    client_id: clientId,
    redirect_uri: redirect,
    response_type: 'code',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 's',
    workspace_id: tenant.workspace_id,
    decision: 'approve',
    ...overrides,
  });
  expect(consent.status).to.equal(200);
  const code = new URL(consent.body.redirect_to).searchParams.get('code')!;
  return { tenant, clientId, redirect, verifier, challenge, code, grantId: consent.body.grant_id as string };
}

describe('OAuth for /mcp (issue 33)', () => {
  // Every test registers from 127.0.0.1, which the per-address limits count: a run leaves no client behind.
  afterEach(() =>
    getStack().ownerDataSource.query(
      `DELETE FROM oauth_clients WHERE registered_from IN ('127.0.0.1', '::ffff:127.0.0.1', '198.51.100.7')`,
    ),
  );

  it('limits registrations per source address (RFC 7591 §5: the server may)', async () => {
    const { oauth } = getStack().runtime.services;
    const { registrationsPerSourcePerHour } = LIMITS.oauth;
    for (let i = 0; i < registrationsPerSourcePerHour; i += 1) {
      await oauth.register('198.51.100.7', { redirect_uris: ['http://127.0.0.1/cb'] });
    }
    const refused = await oauth.register('198.51.100.7', { redirect_uris: ['http://127.0.0.1/cb'] }).catch((e) => e);
    expect(refused).to.be.instanceOf(OAuthError);
    expect(refused).to.include({ error: 'too_many_registrations', status: 429 });
  });

  it('an MCP client signs in by URL with the SDK’s auth(), calls a tool, and loses access on revocation', async () => {
    const tenant = await newTenant(5);
    // The 401 points at the resource metadata (RFC 9728), where the SDK starts.
    const bare = await request('POST', '/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    expect(bare.status).to.equal(401);
    expect(bare.headers.get('www-authenticate')).to.contain(
      `resource_metadata="${getStack().baseUrl}/.well-known/oauth-protected-resource/mcp"`,
    );

    const provider = new ScriptedProvider();
    expect(await auth(provider, { serverUrl: mcpUrl() })).to.equal('REDIRECT');
    expect(provider.information?.client_id).to.match(/^weft_client_/);
    const sentTo = provider.sentTo!;
    expect(sentTo.searchParams.get('code_challenge_method')).to.equal('S256');
    expect(sentTo.searchParams.get('resource')).to.equal(mcpUrl());

    const { redirectTo, grantId } = await playBrowser(sentTo, tenant.user_jwt, tenant.workspace_id);
    expect(redirectTo.origin + redirectTo.pathname).to.equal(provider.redirectUrl);
    expect(redirectTo.searchParams.get('state')).to.equal('state-123');
    const code = redirectTo.searchParams.get('code')!;
    expect(await auth(provider, { serverUrl: mcpUrl(), authorizationCode: code })).to.equal('AUTHORIZED');
    const tokens = provider.saved!;
    expect(tokens.refresh_token).to.match(/^weft_rt_/);
    const claims = decodeJwt(tokens.access_token);
    // RFC 8707: the token's audience names the resource it was issued for, beside the MCP audience.
    expect(claims.aud).to.deep.equal([getStack().config.MCP_JWT_AUDIENCE, mcpUrl()]);
    expect(claims).to.include({ wid: tenant.workspace_id });
    expect(claims.client_id).to.equal(provider.information?.client_id);
    // Never more than an MCP token may hold: no approvals, no *:manage.
    expect(tokens.scope?.split(' ')).to.have.members(MCP_TOKEN_SCOPES);

    const result = await callTool(provider, 'billing_credits_balance');
    expect(result.isError).to.not.equal(true);
    expect(result.structuredContent).to.include({ balance: 5 });
    // Review NL-2: the token is for /mcp, and the REST API is not /mcp. The review dispatched a run with a
    // callback to an outside URL through it; now every REST route answers 401 as to any unusable credential.
    const rest = as(tokens.access_token);
    const dispatched = await rest.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance', input: {} }] },
      callback: { url: 'https://collector.example/weft' },
    });
    expect(dispatched.status, dispatched.text).to.equal(401);
    expect(dispatched.body.detail).to.match(/issued for .*\/mcp only/);
    for (const path of ['/v1/runs', '/v1/billing/ledger', '/v1/cap', '/v1/runs/events']) {
      expect((await rest.get(path)).status, path).to.equal(401);
    }
    expect((await rest.post('/v1/cap/billing.credits_balance', {})).status).to.equal(401);
    expect((await as(tenant.api_key).get('/v1/runs')).body.runs).to.deep.equal([]);
    // …while /mcp takes it, and a token minted by `POST /v1/mcp/token` (no resource) still works on REST.
    expect((await listTools(tokens.access_token)).status).to.equal(200);
    const minted = await as(tenant.user_jwt).post('/v1/mcp/token', { workspace_id: tenant.workspace_id });
    expect((await as(minted.body.token).get('/v1/billing/ledger')).status).to.equal(200);

    // The grant is listed beside the MCP tokens, and its access token among them.
    const grants = await as(tenant.user_jwt).get(`/v1/workspaces/${tenant.workspace_id}/oauth-grants`);
    expect(grants.body.map((grant: { id: string }) => grant.id)).to.deep.equal([grantId]);
    expect(grants.body[0]).to.include({ client_name: 'Scripted MCP client', revoked_at: null });
    const mcpTokens = await as(tenant.user_jwt).get(`/v1/workspaces/${tenant.workspace_id}/mcp-tokens`);
    expect(mcpTokens.body.map((row: { name: string }) => row.name)).to.include('OAuth: Scripted MCP client');

    const revoked = await as(tenant.user_jwt).delete(`/v1/workspaces/${tenant.workspace_id}/oauth-grants/${grantId}`);
    expect(revoked.status).to.equal(204);
    const refused = await listTools(tokens.access_token);
    expect(refused.status).to.equal(401);
    const refreshed = await form('/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: provider.information!.client_id,
    });
    expect(refreshed).to.deep.include({ status: 400, body: refreshed.body });
    expect(refreshed.body.error).to.equal('invalid_grant');
  });

  it('publishes RFC 8414 metadata: S256 only, public clients, the register, token and revoke endpoints', async () => {
    const { baseUrl } = getStack();
    const metadata = await oauthCall('GET', '/.well-known/oauth-authorization-server');
    expect(metadata.status).to.equal(200);
    expect(metadata.body).to.include({
      issuer: baseUrl,
      registration_endpoint: `${baseUrl}/oauth/register`,
      token_endpoint: `${baseUrl}/oauth/token`,
      revocation_endpoint: `${baseUrl}/oauth/revoke`,
    });
    expect(metadata.body.code_challenge_methods_supported).to.deep.equal(['S256']);
    const resource = await oauthCall('GET', '/.well-known/oauth-protected-resource/mcp');
    expect(resource.body).to.include({ resource: `${baseUrl}/mcp` });
    expect(resource.body.authorization_servers).to.deep.equal([baseUrl]);
    // A browser-based client (the Inspector's web UI) registers from its own origin.
    const preflight = await fetch(`${baseUrl}/oauth/register`, {
      method: 'OPTIONS',
      headers: {
        Origin: 'http://localhost:6274',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type',
      },
    });
    expect(preflight.status).to.equal(204);
    expect(preflight.headers.get('access-control-allow-origin')).to.equal('*');
    expect(preflight.headers.get('access-control-allow-headers')).to.contain('content-type');
  });

  it('names PUBLIC_URL in its metadata whatever Host a request sends (review NL-3)', async () => {
    // The review's reproduction was `Host: attacker.example` against a service without PUBLIC_URL, which
    // production now refuses to start (test/unit/config.test.ts). With it set, the Host is never read.
    const app = new Koa();
    app.use(oauthMiddleware(getStack().runtime.services.oauth, { PUBLIC_URL: 'https://weft.example.com/' }));
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const get = (path: string) =>
        new Promise<any>((resolve, reject) => {
          const req = httpRequest({ port, host: '127.0.0.1', path, headers: { host: 'attacker.example' } }, (res) => {
            let text = '';
            res.on('data', (chunk) => {
              text += chunk;
            });
            res.on('end', () => resolve(JSON.parse(text)));
          });
          req.on('error', reject);
          req.end();
        });
      const metadata = await get('/.well-known/oauth-authorization-server');
      expect(metadata).to.include({
        issuer: 'https://weft.example.com',
        authorization_endpoint: 'https://weft.example.com/oauth/authorize',
        token_endpoint: 'https://weft.example.com/oauth/token',
      });
      const resource = await get('/.well-known/oauth-protected-resource/mcp');
      expect(resource).to.include({ resource: 'https://weft.example.com/mcp' });
      expect(resource.authorization_servers).to.deep.equal(['https://weft.example.com']);
      expect(JSON.stringify([metadata, resource])).to.not.contain('attacker');
    } finally {
      server.close();
    }
  });

  it('refuses a redirect URI the client did not register, but takes its loopback URI on any port', async () => {
    const { tenant, clientId, challenge } = await approvedCode();
    const base = {
      client_id: clientId,
      response_type: 'code',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      workspace_id: tenant.workspace_id,
      decision: 'approve',
    };
    const elsewhere = await as(tenant.user_jwt).post('/v1/oauth/consent', {
      ...base,
      redirect_uri: 'https://attacker.example/cb',
    });
    expect(elsewhere.status).to.equal(400);
    const query = new URLSearchParams({ ...base, redirect_uri: 'http://127.0.0.1:43111/other' });
    const authorize = await fetch(`${getStack().baseUrl}/oauth/authorize?${query}`, { redirect: 'manual' });
    expect(authorize.status).to.equal(400);
    expect(((await authorize.json()) as { error: string }).error).to.equal('invalid_request');
    const otherPort = await as(tenant.user_jwt).post('/v1/oauth/consent', {
      ...base,
      redirect_uri: 'http://127.0.0.1:50999/cb',
    });
    expect(otherPort.status).to.equal(200);
    expect(new URL(otherPort.body.redirect_to).searchParams.get('code')).to.match(/^weft_oc_/);
  });

  it('refuses an authorization request without PKCE, and a code exchange without the verifier', async () => {
    const { tenant, clientId, redirect, code } = await approvedCode();
    const query = new URLSearchParams({ client_id: clientId, redirect_uri: redirect, response_type: 'code' });
    const noChallenge = await fetch(`${getStack().baseUrl}/oauth/authorize?${query}`, { redirect: 'manual' });
    expect(noChallenge.status).to.equal(302);
    expect(new URL(noChallenge.headers.get('location')!).searchParams.get('error')).to.equal('invalid_request');
    const plain = await as(tenant.user_jwt).post('/v1/oauth/consent', {
      client_id: clientId,
      redirect_uri: redirect,
      code_challenge: 'x'.repeat(43),
      code_challenge_method: 'plain',
      workspace_id: tenant.workspace_id,
      decision: 'approve',
    });
    expect(new URL(plain.body.redirect_to).searchParams.get('error')).to.equal('invalid_request');
    expect(plain.body.grant_id).to.equal(null);

    const withoutVerifier = await form('/oauth/token', {
      grant_type: 'authorization_code',
      code,
      client_id: clientId,
      redirect_uri: redirect,
    });
    expect(withoutVerifier.status).to.equal(400);
    expect(withoutVerifier.body.error).to.equal('invalid_request');
  });

  it('a reused code is refused and revokes what the first exchange issued', async () => {
    const { tenant, clientId, redirect, verifier, code, grantId } = await approvedCode();
    const exchange = () =>
      form('/oauth/token', {
        grant_type: 'authorization_code',
        code,
        client_id: clientId,
        redirect_uri: redirect,
        code_verifier: verifier,
      });
    const first = await exchange();
    expect(first.status).to.equal(200);
    expect((await listTools(first.body.access_token)).status).to.equal(200);
    const again = await exchange();
    expect(again.status).to.equal(400);
    expect(again.body.error).to.equal('invalid_grant');
    expect((await listTools(first.body.access_token)).status).to.equal(401);
    const grants = await as(tenant.user_jwt).get(`/v1/workspaces/${tenant.workspace_id}/oauth-grants`);
    expect(grants.body[0]).to.include({ id: grantId, revoked_reason: 'code_reused' });
  });

  it('refresh tokens rotate; presenting a rotated one revokes the grant', async () => {
    const { clientId, redirect, verifier, code } = await approvedCode();
    const issued = await form('/oauth/token', {
      grant_type: 'authorization_code',
      code,
      client_id: clientId,
      redirect_uri: redirect,
      code_verifier: verifier,
    });
    const refresh = (token: string) =>
      form('/oauth/token', { grant_type: 'refresh_token', refresh_token: token, client_id: clientId });
    const rotated = await refresh(issued.body.refresh_token);
    expect(rotated.status).to.equal(200);
    expect(rotated.body.refresh_token).to.not.equal(issued.body.refresh_token);
    const reused = await refresh(issued.body.refresh_token);
    expect(reused.body.error).to.equal('invalid_grant');
    // The theft is assumed: the rotated pair dies too.
    expect((await refresh(rotated.body.refresh_token)).body.error).to.equal('invalid_grant');
    expect((await listTools(rotated.body.access_token)).status).to.equal(401);
  });

  it('a refresh acts only while the person still belongs to the workspace', async () => {
    const { tenant, clientId, redirect, verifier, code, grantId } = await approvedCode();
    const issued = await form('/oauth/token', {
      grant_type: 'authorization_code',
      code,
      client_id: clientId,
      redirect_uri: redirect,
      code_verifier: verifier,
    });
    await getStack().ownerDataSource.query('DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2', [
      tenant.workspace_id,
      tenant.user_id,
    ]);
    const refreshed = await form('/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: issued.body.refresh_token,
      client_id: clientId,
    });
    expect(refreshed.body.error).to.equal('invalid_grant');
    const [grant] = await getStack().ownerDataSource.query('SELECT revoked_reason FROM oauth_grants WHERE id = $1', [
      grantId,
    ]);
    expect(grant.revoked_reason).to.equal('membership_ended');
  });

  it('refuses a token for another resource (RFC 8707), and revocation (RFC 7009) ends the grant', async () => {
    const { clientId, redirect, verifier, code } = await approvedCode();
    const exchange = (resource: string) =>
      form('/oauth/token', {
        grant_type: 'authorization_code',
        code,
        client_id: clientId,
        redirect_uri: redirect,
        code_verifier: verifier,
        resource,
      });
    const foreign = await exchange('https://elsewhere.example/mcp');
    expect(foreign.status).to.equal(400);
    expect(foreign.body.error).to.equal('invalid_target');

    const second = await approvedCode({ resource: 'https://elsewhere.example/mcp' });
    expect(second.code).to.equal(null);

    const ok = await approvedCode({ resource: mcpUrl() });
    const issued = await form('/oauth/token', {
      grant_type: 'authorization_code',
      code: ok.code,
      client_id: ok.clientId,
      redirect_uri: ok.redirect,
      code_verifier: ok.verifier,
      resource: mcpUrl(),
    });
    expect(issued.status).to.equal(200);
    expect((await form('/oauth/revoke', { token: issued.body.refresh_token, client_id: ok.clientId })).status).to.equal(
      200,
    );
    expect((await listTools(issued.body.access_token)).status).to.equal(401);
  });

  it('registration takes only acceptable redirect URIs', async () => {
    for (const uri of ['http://example.com/cb', 'https://ok.example/cb#frag', 'javascript:alert(1)']) {
      const refused = await oauthCall('POST', '/oauth/register', { redirect_uris: [uri] });
      expect(refused.status, uri).to.equal(400);
      expect(refused.body.error, uri).to.equal('invalid_redirect_uri');
    }
    const none = await oauthCall('POST', '/oauth/register', { client_name: 'x' });
    expect(none.body.error).to.equal('invalid_client_metadata');
  });
});
