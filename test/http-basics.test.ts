import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { expect } from 'chai';
import type { DataSource } from 'typeorm';
import { QueryFailedError } from 'typeorm';
import { createAppDataSource } from '../src/app/data-source';
import { deleteMaintenanceSchedules } from '../src/app/schedules';
import { assertCleanInput } from '../src/platform/api/clean-input';
import { describeError } from '../src/platform/api/errors';
import type { PoolRole } from '../src/platform/db/data-source';
import { freePort } from '../src/platform/temporal/dev-server';
import { eventually, sleep } from './helpers/eventually';
import { as, request } from './helpers/http';
import { terminateTaskQueue } from './helpers/leftovers';
import { bootStack, getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

describe('HTTP basics', () => {
  it('answers liveness and readiness (database and Temporal)', async () => {
    expect((await request('GET', '/v1/health')).body).to.deep.equal({ status: 'ok' });
    const ready = await request('GET', '/v1/health/ready');
    expect(ready.status).to.equal(200);
    expect(ready.body).to.deep.equal({ status: 'ready', checks: { database: 'ok', temporal: 'ok' } });
  });

  it('returns JSON 404 for unknown routes', async () => {
    const response = await request('GET', '/v1/does-not-exist');
    expect(response.status).to.equal(404);
    expect(response.body.detail).to.be.a('string');
  });

  it('gives every response a request id and echoes a client correlation id', async () => {
    const correlation = '6f1c1f0e-3a55-4c55-9a2a-0f8f3c1d2e4b';
    const response = await request('GET', '/v1/health', { headers: { 'x-correlation-id': correlation } });
    expect(response.headers.get('x-correlation-id')).to.equal(correlation);
    expect(response.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    const generated = await request('GET', '/v1/health', { headers: { 'x-correlation-id': 'not a uuid' } });
    expect(generated.headers.get('x-correlation-id')).to.match(/^[0-9a-f-]{36}$/);
  });

  describe('bad input never yields 500', () => {
    let key: string;
    before(async () => {
      key = (await newTenant()).api_key;
    });

    it('400 for malformed JSON', async () => {
      const response = await request('POST', '/v1/auth/me/api-keys', {
        token: key,
        rawBody: '{"name": ',
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).to.equal(400);
      expect(response.body).to.have.property('detail');
    });

    it('413 for a body above 1 MB', async () => {
      const response = await request('POST', '/v1/auth/me/api-keys', {
        token: key,
        rawBody: JSON.stringify({ name: 'x'.repeat(1_100_000), scopes: [] }),
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).to.equal(413);
      expect(response.body).to.have.property('detail');
    });

    it('422 in the HTTPValidationError shape for a wrong body', async () => {
      const response = await as(key).post('/v1/auth/me/api-keys', { name: 42, scopes: 'all' });
      expect(response.status).to.equal(422);
      const locations = response.body.detail.map((issue: { loc: unknown[] }) => issue.loc.join('.'));
      expect(locations).to.include.members(['body.name', 'body.scopes']);
      for (const issue of response.body.detail) {
        expect(issue).to.have.all.keys('loc', 'msg', 'type');
      }
    });

    it('422 for a NUL character anywhere in the input (Postgres stores none)', async () => {
      const body = await as(key).post('/v1/auth/me/api-keys', { name: 'a\u0000b', scopes: [] });
      expect(body.status).to.equal(422);
      expect(body.body.detail[0]).to.deep.include({ loc: ['body', 'name'], type: 'string_nul' });
      const nested = await as(key).patch('/v1/ontology/config', { search: { retrieval_mode: 'x\u0000' } });
      expect(nested.status).to.equal(422);
      const query = await as(key).get('/v1/ontology/nodes/typeahead?q=a%00b');
      expect(query.status).to.equal(422);
      expect(query.body.detail[0].loc).to.deep.equal(['query', 'q']);
    });

    it('422 for an unpaired UTF-16 surrogate in any string, property key or PATCH (jsonb refuses them)', async () => {
      const nodes = as(key);
      const name = await nodes.post('/v1/ontology/nodes', { type: 't', name: 'a\ud800' });
      expect(name.status).to.equal(422);
      expect(name.body.detail[0]).to.deep.include({ loc: ['body', 'name'], type: 'string_surrogate' });
      const value = await nodes.post('/v1/ontology/nodes', { type: 't', name: 'v', properties: { note: 'x\udc00' } });
      expect(value.status).to.equal(422);
      expect(value.body.detail[0].loc).to.deep.equal(['body', 'properties', 'note']);
      const nested = await nodes.post('/v1/ontology/nodes', {
        type: 't',
        name: 'k',
        properties: { list: [{ 'bad\ud83d': 1 }] },
      });
      expect(nested.status).to.equal(422);
      expect(nested.body.detail[0].loc).to.deep.equal(['body', 'properties', 'list', 0, 'bad\ud83d']);

      // A surrogate pair is a well-formed character (an emoji) and is stored as it is.
      const created = await nodes.post('/v1/ontology/nodes', { type: 't', name: 'ok \ud83d\ude00' });
      expect(created.status).to.equal(201);
      expect(created.body.name).to.equal('ok 😀');
      const patched = await nodes.patch(`/v1/ontology/nodes/${created.body.id}`, { properties: { p: '\udfff' } });
      expect(patched.status).to.equal(422);
      expect((await nodes.get(`/v1/ontology/nodes/${created.body.id}`)).body.properties).to.deep.equal({});
      expect((await nodes.patch('/v1/ontology/config', { search: { retrieval_mode: '\ud800' } })).status).to.equal(422);
      // Percent-encoded surrogate bytes are not UTF-8: the query decodes them to U+FFFD, never to a 500.
      const query = await nodes.get('/v1/ontology/nodes/typeahead?q=%ED%A0%80');
      expect(query.status).to.equal(200);
    });

    it('422 for JSON nested deeper than 64 levels: a 6 KB body of 3,000 nested arrays', async () => {
      const deep = `{"type":"t","name":"deep","properties":{"x":${'['.repeat(3000)}${']'.repeat(3000)}}}`;
      expect(deep.length).to.be.within(6000, 6100);
      const response = await request('POST', '/v1/ontology/nodes', {
        token: key,
        rawBody: deep,
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).to.equal(422);
      const [issue] = response.body.detail;
      expect(issue.type).to.equal('json_too_deep');
      // The body is level 1, so the first refused array is the 65th container.
      expect(issue.loc).to.deep.equal(['body', 'properties', 'x', ...Array(62).fill(0)]);

      const nest = (levels: number): unknown => (levels === 0 ? 'leaf' : [nest(levels - 1)]);
      const atTheCap = await as(key).post('/v1/ontology/nodes', {
        type: 't',
        name: 'cap',
        properties: { x: nest(62) },
      });
      expect(atTheCap.status).to.equal(201);
      const overTheCap = await as(key).post('/v1/ontology/nodes', {
        type: 't',
        name: 'cap',
        properties: { x: nest(63) },
      });
      expect(overTheCap.status).to.equal(422);
    });

    it('walks a 200 KB body in a few milliseconds', () => {
      // Wide (10,000 keys), deep (nested 60 levels, repeated) and long-string bodies of about 200 KB each.
      const wide = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, `v${i}x`]));
      const deepOnce = (levels: number): unknown => (levels === 0 ? 'v' : { a: deepOnce(levels - 1) });
      const deep = Array.from({ length: 500 }, () => deepOnce(60));
      const long = { text: 'x'.repeat(200_000) };
      for (const [shape, body] of Object.entries({ wide, deep, long })) {
        expect(JSON.stringify(body).length, shape).to.be.within(150_000, 260_000);
        // The best of five runs: the machine's other work only ever adds time.
        let ms = Number.POSITIVE_INFINITY;
        for (let run = 0; run < 5; run += 1) {
          const started = performance.now();
          assertCleanInput({ properties: body }, 'body');
          ms = Math.min(ms, performance.now() - started);
        }
        expect(ms, `${shape}: ${ms.toFixed(1)} ms`).to.be.below(50);
      }
    });

    it('422 for a JSON body that is not an object', async () => {
      const response = await request('POST', '/v1/auth/me/api-keys', {
        token: key,
        rawBody: '[1,2,3]',
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).to.equal(422);
    });

    it('415 naming application/json for a JSON route sent another Content-Type, or none', async () => {
      const body = JSON.stringify({ name: 'ci' });
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
        const headers: Record<string, string> = type ? { 'content-type': type } : {};
        const response = await request('POST', '/v1/auth/me/api-keys', { token: key, rawBody: body, headers });
        expect(response.status, String(type)).to.equal(415);
        expect(response.body.detail).to.be.a('string').and.include('application/json');
        if (type) expect(response.body.detail).to.include(type);
      }
      // JSON with a charset parameter is still JSON.
      const charset = await request('POST', '/v1/ontology/nodes', {
        token: key,
        rawBody: JSON.stringify({ type: 'person', name: 'Ada' }),
        headers: { 'content-type': 'application/json; charset=utf-8' },
      });
      expect(charset.status).to.equal(201);
    });

    it('a bare POST (no body, no Content-Type) still reaches a route whose body is optional', async () => {
      const missing = `/v1/ontology/merges/${randomUUID()}/approve`;
      // 404 for the unknown merge: the request got past the media type and the body's validation.
      expect((await request('POST', missing, { token: key })).status).to.equal(404);
      const typed = await request('POST', missing, {
        token: key,
        rawBody: 'yes',
        headers: { 'content-type': 'text/plain' },
      });
      expect(typed.status).to.equal(415);
      // A required body sent as nothing is still a validation error, not a media-type one.
      expect((await request('POST', '/v1/auth/me/api-keys', { token: key })).status).to.equal(422);
    });

    it('422 for a malformed path id and a query out of range', async () => {
      expect((await as(key).get('/v1/auth/me/api-keys/not-a-uuid')).status).to.equal(422);
      const keys = await as(key).get('/v1/auth/me/api-keys');
      const usage = await as(key).get(`/v1/auth/me/api-keys/${keys.body[0].id}/usage?days=91`);
      expect(usage.status).to.equal(422);
      expect(usage.body.detail[0].loc).to.deep.equal(['query', 'days']);
    });
  });

  it('serves the OpenAPI 3.1 document and a reference page', async () => {
    const document = await request('GET', '/v1/openapi.json');
    expect(document.status).to.equal(200);
    expect(document.body.openapi).to.equal('3.1.0');
    expect(document.body.info.version).to.equal('0.21.8');
    expect(document.body.paths).to.include.keys(
      '/v1/health',
      '/v1/auth/me/api-keys',
      '/v1/auth/me/api-keys/{api_key_id}/usage',
      '/v1/mcp/token',
      '/v1/workspaces/{workspace_id}/mcp-tokens/{key_id}',
    );
    const page = await request('GET', '/docs');
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.contain('text/html');
    expect(page.text).to.contain('/v1/openapi.json');
    const asset = await request('GET', '/docs/assets/swagger-ui-bundle.js');
    expect(asset.status).to.equal(200);
    expect(asset.text.length).to.be.greaterThan(100_000);
  });
});

describe('database deadlines and pools', () => {
  const settings = {
    DATABASE_STATEMENT_TIMEOUT_MS: 300,
    DATABASE_WORKER_STATEMENT_TIMEOUT_MS: 700,
    DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: 900,
    // Generous: six queries queue on two connections, and opening one is slow on a loaded machine. The acquire
    // deadline itself is tested over HTTP below.
    DATABASE_ACQUIRE_TIMEOUT_MS: 5000,
    DATABASE_POOL_SIZE: 2,
    DATABASE_WORKER_POOL_SIZE: 3,
  };

  /** An application data source of the suite's database with the settings above. */
  async function pool(role: PoolRole, run: (dataSource: DataSource) => Promise<void>) {
    const dataSource = await createAppDataSource({ ...getStack().config, ...settings }, role).initialize();
    try {
      await run(dataSource);
    } finally {
      await dataSource.destroy();
    }
  }

  it('each pool has its own size, and its own statement and idle-in-transaction timeouts per connection', async () => {
    for (const [role, statement, size] of [
      ['api', '300ms', 2],
      ['worker', '700ms', 3],
    ] as const) {
      await pool(role, async (dataSource) => {
        const rows: { statement: string; idle: string; pid: number }[] = await Promise.all(
          Array.from({ length: 6 }, async () => {
            const [row] = await dataSource.query(
              `SELECT current_setting('statement_timeout') AS statement,
                      current_setting('idle_in_transaction_session_timeout') AS idle,
                      pg_backend_pid() AS pid, pg_sleep(0.1)`,
            );
            return row;
          }),
        );
        expect(
          rows.every((row) => row.statement === statement && row.idle === '900ms'),
          role,
        ).to.equal(true);
        expect(new Set(rows.map((row) => row.pid)).size, `${role} connections`).to.equal(size);
      });
    }
  });

  it('cancels a statement past the timeout cleanly, and the connection serves the next query', async () => {
    await pool('api', async (dataSource) => {
      const started = Date.now();
      const error = await dataSource.query('SELECT pg_sleep(5)').catch((caught: unknown) => caught);
      expect(Date.now() - started).to.be.below(2000);
      expect(error).to.be.instanceOf(QueryFailedError);
      expect((error as QueryFailedError & { code: string }).code).to.equal('57014');
      expect(describeError(error)).to.deep.include({ status: 504 });
      expect(await dataSource.query('SELECT 1 AS one')).to.deep.equal([{ one: 1 }]);
    });
  });

  it('ends a transaction left idle past the timeout, releasing its locks', async () => {
    await pool('api', async (dataSource) => {
      const runner = dataSource.createQueryRunner();
      await runner.connect();
      await runner.startTransaction();
      const [{ pid }] = await runner.query('SELECT pg_backend_pid() AS pid');
      await eventually(
        async () =>
          (
            await getStack().ownerDataSource.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [
              pid,
            ])
          )[0].n === 0,
        { what: 'Postgres to end the idle transaction', timeoutMs: 5000 },
      );
      await runner.release().catch(() => undefined);
    });
  });

  describe('over HTTP', () => {
    let booted: Awaited<ReturnType<typeof bootStack>>;
    before(async function () {
      this.timeout(60_000);
      booted = await bootStack({
        DATABASE_STATEMENT_TIMEOUT_MS: '500',
        DATABASE_ACQUIRE_TIMEOUT_MS: '300',
        DATABASE_POOL_SIZE: '2',
      });
    });
    after(async function () {
      this.timeout(60_000);
      await booted?.stop();
    });

    it('504 when a statement waits past the timeout (a row lock held elsewhere)', async () => {
      const { baseUrl } = booted.stack;
      const tenant = await newTenant();
      const node = await as(tenant.api_key, baseUrl).post('/v1/ontology/nodes', { type: 't', name: 'locked' });
      const holder = getStack().ownerDataSource.createQueryRunner();
      await holder.connect();
      await holder.startTransaction();
      try {
        await holder.query('SELECT id FROM nodes WHERE id = $1 FOR UPDATE', [node.body.id]);
        const started = Date.now();
        const patched = await as(tenant.api_key, baseUrl).patch(`/v1/ontology/nodes/${node.body.id}`, { name: 'x' });
        expect(patched.status).to.equal(504);
        expect(patched.body).to.deep.equal({ detail: 'The database did not answer in time' });
        expect(Date.now() - started).to.be.below(3000);
      } finally {
        await holder.rollbackTransaction();
        await holder.release();
      }
      expect((await as(tenant.api_key, baseUrl).get(`/v1/ontology/nodes/${node.body.id}`)).body.name).to.equal(
        'locked',
      );
    });

    it('503 with Retry-After when no connection frees up in time, then serves again', async () => {
      const { baseUrl, runtime } = booted.stack;
      const tenant = await newTenant();
      const held = [runtime.dataSource.createQueryRunner(), runtime.dataSource.createQueryRunner()];
      for (const runner of held) await runner.connect();
      try {
        const started = Date.now();
        const response = await as(tenant.api_key, baseUrl).get('/v1/ontology/config');
        expect(response.status).to.equal(503);
        expect(response.headers.get('retry-after')).to.equal('1');
        expect(response.body).to.deep.equal({ detail: 'The database is busy; retry shortly' });
        expect(Date.now() - started).to.be.below(3000);
      } finally {
        for (const runner of held) await runner.release();
      }
      expect((await as(tenant.api_key, baseUrl).get('/v1/ontology/config')).status).to.equal(200);
    });
  });

  it('WEFT_PROCESS=all runs the API and the worker on two pools', async function () {
    this.timeout(60_000);
    const { config, ownerDataSource, runtime } = getStack();
    const port = await freePort();
    const taskQueue = `weft-all-${randomUUID().slice(0, 8)}`;
    const child = spawn(process.execPath, ['--import', 'tsx', 'main.ts'], {
      cwd: path.resolve(__dirname, '..'),
      env: {
        ...process.env,
        WEFT_PROCESS: 'all',
        PORT: String(port),
        TEMPORAL_ADDRESS: config.TEMPORAL_ADDRESS,
        TEMPORAL_TASK_QUEUE: taskQueue,
        TEMPORAL_DEV_SERVER: 'never',
        LOG_LEVEL: 'error',
      },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const baseUrl = `http://127.0.0.1:${port}`;
      await eventually(
        async () => (await request('GET', '/v1/health/ready', { baseUrl }).catch(() => undefined))?.status === 200,
        { what: 'the API of WEFT_PROCESS=all', timeoutMs: 45_000 },
      );
      const rows: { application_name: string }[] = await ownerDataSource.query(
        `SELECT DISTINCT application_name FROM pg_stat_activity
         WHERE datname = current_database() AND usename = $1 AND application_name IN ('weft', 'weft-worker')`,
        [new URL(config.DATABASE_URL).username],
      );
      expect(rows.map((row) => row.application_name).sort()).to.deep.equal(['weft', 'weft-worker']);
    } finally {
      child.kill('SIGINT');
      await exited;
      await deleteMaintenanceSchedules(runtime.temporal.client, taskQueue);
      // A schedule may have fired while the child ran (the session sweeper runs every 30 s); its
      // run has no worker left to finish it.
      await terminateTaskQueue(runtime.temporal.client, taskQueue);
    }
  });
});

describe('rate limits per credential', () => {
  let booted: Awaited<ReturnType<typeof bootStack>>;
  before(async function () {
    this.timeout(60_000);
    // One request a second, and a reserve of three for bursts.
    booted = await bootStack({ RATE_LIMIT_RPS: '1', RATE_LIMIT_BURST: '3', RATE_LIMIT_AUTH_FAILURES: '5' });
  });
  after(async function () {
    this.timeout(60_000);
    await booted?.stop();
  });

  it('429 with Retry-After once a credential spends its second and burst reserve; others are unaffected', async () => {
    const { baseUrl } = booted.stack;
    const tenant = await newTenant();
    const started = Date.now();
    const responses = await Promise.all(
      Array.from({ length: 8 }, () => as(tenant.api_key, baseUrl).get('/v1/ontology/config')),
    );
    const elapsedSeconds = (Date.now() - started) / 1000;
    const passed = responses.filter((response) => response.status === 200).length;
    // 1 + 3 within one second; a second that turned over while they ran may let one more through each.
    expect(passed).to.be.within(4, 4 + Math.floor(elapsedSeconds));
    const limited = responses.find((response) => response.status === 429);
    expect(limited?.body).to.deep.equal({ detail: 'Rate limit exceeded' });
    expect(limited?.headers.get('retry-after')).to.equal('1');

    // Another credential of the same user has a bucket of its own; health checks are not limited.
    expect((await as(tenant.user_jwt, baseUrl).get('/v1/ontology/config')).status).to.equal(200);
    expect((await request('GET', '/v1/health', { baseUrl })).status).to.equal(200);

    // After Retry-After, the next second's request goes through, and the one after it does not.
    await sleep(1100);
    expect((await as(tenant.api_key, baseUrl).get('/v1/ontology/config')).status).to.equal(200);
    expect((await as(tenant.api_key, baseUrl).get('/v1/ontology/config')).status).to.equal(429);
  });

  it('counts refused requests too: a key probing a scope it lacks is limited like any other', async () => {
    const { baseUrl } = booted.stack;
    const tenant = await newTenant();
    const narrow = await as(tenant.user_jwt, baseUrl).post('/v1/auth/me/api-keys', { name: 'narrow', scopes: [] });
    const statuses = await Promise.all(
      Array.from({ length: 6 }, async () => (await as(narrow.body.token, baseUrl).get('/v1/ontology/config')).status),
    );
    expect(statuses).to.include(403);
    expect(statuses).to.include(429);
  });

  it('counts each call of an MCP JSON-RPC batch: a batch of five spends the second and the reserve', async () => {
    const { baseUrl } = booted.stack;
    const tenant = await newTenant();
    const batch = Array.from({ length: 5 }, (_, id) => ({ jsonrpc: '2.0', id, method: 'tools/list', params: {} }));
    const answer = await as(tenant.api_key, baseUrl).post('/mcp', batch, {
      accept: 'application/json, text/event-stream',
    });
    expect(answer.status).to.equal(429);
    expect(answer.headers.get('retry-after')).to.be.a('string');
  });

  // Last in this block: it spends the test address's allowance of refused credentials for a minute.
  it('counts refused credentials per source address: invalid keys get 429 after the allowance', async () => {
    const { baseUrl } = booted.stack;
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 8; attempt++) {
      // The codec routes check their credentials themselves, and count against the same allowance.
      const answer =
        attempt % 2 === 0
          ? await as(`weft_sk_${randomUUID().replaceAll('-', '')}`, baseUrl).get('/v1/ontology/config')
          : await as(`weft_op_${randomUUID().replaceAll('-', '')}`, baseUrl).post('/v1/temporal-codec/decode', {});
      statuses.push(answer.status);
    }
    expect(statuses).to.deep.equal([401, 401, 401, 401, 401, 429, 429, 429]);
    const limited = await as('weft_sk_forged', baseUrl).get('/v1/ontology/config');
    expect(limited.body).to.deep.equal({ detail: 'Rate limit exceeded' });
    expect(Number(limited.headers.get('retry-after'))).to.be.within(1, 60);
  });
});
