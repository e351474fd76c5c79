import { expect } from 'chai';
import { as, request } from './helpers/http';
import { newTenant } from './helpers/tenants';

const key = async (jwt: string, scopes: string[]) =>
  (await as(jwt).post('/v1/auth/me/api-keys', { name: 'cap', scopes })).body.token as string;

describe('capabilities: the registry, the routes and the envelope (contract 4.2)', () => {
  it('lists every mounted tool with its tag, cost and JSON Schemas', async () => {
    const { api_key } = await newTenant();
    const listed = await as(api_key).get('/v1/cap');
    expect(listed.status).to.equal(200);
    const byName = new Map(listed.body.tools.map((tool: any) => [tool.name, tool]));
    const balance: any = byName.get('billing.credits_balance');
    expect(balance).to.include({ tag: 'capabilities:read', cost: 0, credit_kind: null, idempotent: false });
    expect(balance.input_schema).to.include({ type: 'object' });
    expect(balance.output_schema.properties).to.have.keys(['balance', 'locked']);
  });

  it('answers in the envelope {result, credits_charged, idempotency_key}, with a key of its own if none', async () => {
    const { api_key } = await newTenant(42);
    const answered = await as(api_key).post('/v1/cap/billing.credits_balance', {});
    expect(answered.status).to.equal(200);
    expect(answered.body.result).to.deep.equal({ balance: 42, locked: false });
    expect(answered.body.credits_charged).to.equal(0);
    expect(answered.body.idempotency_key).to.match(/^[0-9a-f-]{36}$/);

    const echoed = await as(api_key).post('/v1/cap/billing.credits_balance', {}, { 'Idempotency-Key': 'read-key 1' });
    expect(echoed.body.idempotency_key).to.equal('read-key 1');
    expect(echoed.headers.get('idempotent-replayed')).to.equal(null);
  });

  it('accepts a call without a body for a tool that takes no input', async () => {
    const { api_key } = await newTenant(1);
    const answered = await request('POST', '/v1/cap/billing.credits_balance', { token: api_key });
    expect(answered.status).to.equal(200);
    expect(answered.body.result.balance).to.equal(1);
  });

  it('is 404 for an unknown tool', async () => {
    const { api_key } = await newTenant();
    const unknown = await as(api_key).post('/v1/cap/agent.no_such_tool', {});
    expect(unknown.status).to.equal(404);
    expect(unknown.body).to.have.property('detail');
  });

  it('validates the input into a 422 HTTPValidationError with body paths', async () => {
    const { api_key } = await newTenant();
    const refused = await as(api_key).post('/v1/cap/billing.credits_balance', { surprise: true });
    expect(refused.status).to.equal(422);
    expect(refused.body.detail[0].loc[0]).to.equal('body');
  });

  it('refuses an Idempotency-Key longer than 255 characters or not printable ASCII with 422', async () => {
    const { api_key } = await newTenant();
    const long = await as(api_key).post('/v1/cap/billing.credits_balance', {}, { 'Idempotency-Key': 'k'.repeat(256) });
    expect(long.status).to.equal(422);
    expect(long.body.detail[0].loc).to.deep.equal(['header', 'Idempotency-Key']);
    const longest = await as(api_key).post(
      '/v1/cap/billing.credits_balance',
      {},
      { 'Idempotency-Key': 'k'.repeat(255) },
    );
    expect(longest.status).to.equal(200);
    // fetch refuses non-ASCII header values itself, so send Latin-1 bytes as a raw header value.
    const accented = await request('POST', '/v1/cap/billing.credits_balance', {
      token: api_key,
      body: {},
      headers: { 'Idempotency-Key': Buffer.from('cl\u00e9', 'latin1').toString('binary') },
    });
    expect(accented.status).to.equal(422);
  });

  it('needs capabilities:read for a read tool (403) and authentication (401)', async () => {
    const { user_jwt } = await newTenant();
    const narrow = await key(user_jwt, ['ontology:read']);
    expect((await as(narrow).post('/v1/cap/billing.credits_balance', {})).status).to.equal(403);
    expect((await as(narrow).get('/v1/cap')).status).to.equal(403);
    expect((await request('POST', '/v1/cap/billing.credits_balance', { body: {} })).status).to.equal(401);
    const reader = await key(user_jwt, ['capabilities:read']);
    expect((await as(reader).post('/v1/cap/billing.credits_balance', {})).status).to.equal(200);
  });

  it('documents each tool in the OpenAPI document, tagged capabilities plus its access tag', async () => {
    const document = (await request('GET', '/v1/openapi.json')).body;
    const operation = document.paths['/v1/cap/billing.credits_balance'].post;
    expect(operation.tags).to.deep.equal(['capabilities', 'capabilities:read']);
    expect(operation.responses['200'].content['application/json'].schema.properties).to.have.keys([
      'result',
      'credits_charged',
      'idempotency_key',
    ]);
  });
});
