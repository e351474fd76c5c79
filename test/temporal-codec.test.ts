import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { ApplicationFailure, Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { expect } from 'chai';
import { createApp } from '../src/app/http';
import { mintOperatorToken, revokeOperatorToken } from '../src/cli/operator';
import { codeIndexWorkflow } from '../src/code/workflow';
import { loadConfig } from '../src/platform/config';
import { ENCRYPTED_ENCODING, KEY_ID_METADATA, WORKSPACE_METADATA } from '../src/platform/temporal/codec';
import { freePort, startDevServer, temporalCliPath } from '../src/platform/temporal/dev-server';
import { findFailureDetails } from '../src/platform/temporal/failures';
import { REFUSED_PAYLOAD_FAILURE } from '../src/platform/temporal/refused-payload';
import {
  KIND_ATTRIBUTE,
  RUN_STATUS_ATTRIBUTE,
  WAITING_FOR_ATTRIBUTE,
  WORKSPACE_ID_ATTRIBUTE,
} from '../src/platform/temporal/search-attributes';
import { eventually } from './helpers/eventually';
import { as, request } from './helpers/http';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';
import { describeOnceStarted, startedWorkflow } from './helpers/workflows';

const run = promisify(execFile);

const PROMPT = 'Hedy Lamarr works at Frequency Hopping Labs. Who is Hedy Lamarr?';
// What the prompt puts into its history: the sentence, the refined nodes, the answer citing them.
const PLAINTEXTS = ['Hedy Lamarr', 'Frequency Hopping', 'works at'];

type History = temporal.api.history.v1.IHistory;

/**
 * Every `Payloads` message of a history (inputs, results, activity inputs and results, failure
 * details), except the `data` detail of a local activity's marker: the SDK's own bookkeeping
 * (sequence number, activity type, times), written by its core without the codec.
 */
function payloadsOf(value: unknown, found: Payload[] = []): Payload[] {
  if (Array.isArray(value)) for (const item of value) payloadsOf(item, found);
  else if (value && typeof value === 'object' && !(value instanceof Uint8Array)) {
    for (const [key, item] of Object.entries(value)) {
      if (key === 'payloads' && Array.isArray(item)) found.push(...(item as Payload[]));
      else if (key === 'markerRecordedEventAttributes') {
        const { data: _bookkeeping, ...details } = (item as { details?: Record<string, unknown> }).details ?? {};
        payloadsOf(details, found);
      } else payloadsOf(item, found);
    }
  }
  return found;
}

const utf8 = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');
const b64 = (text: string) => Buffer.from(text).toString('base64');
const toJson = (payload: Payload) => ({
  metadata: Object.fromEntries(
    Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
  ),
  data: Buffer.from(payload.data ?? []).toString('base64'),
});

async function promptWithHistory() {
  const tenant = await newTenant(20);
  const response = await as(tenant.api_key).post('/v1/ontology/prompt', { prompt: PROMPT });
  expect(response.status).to.equal(200);
  const handle = getStack().runtime.temporal.client.workflow.getHandle(`prompt-${response.body.correlation_id}`);
  const history: History = await handle.fetchHistory();
  return { tenant, response, handle, history };
}

describe('Temporal payloads are encrypted (payload codec)', function () {
  this.timeout(30_000);
  let shared: Awaited<ReturnType<typeof promptWithHistory>>;
  // Another tenant's prompt: the payloads tenant A must not open.
  let other: Awaited<ReturnType<typeof promptWithHistory>>;
  before(async () => {
    shared = await promptWithHistory();
    other = await promptWithHistory();
  });

  it("a prompt's history has no plaintext of its prompt, nodes or answer, yet the client gets its result", async () => {
    const { response, handle, history } = shared;
    expect(response.body.nodes.map((node: { name: string }) => node.name)).to.include('Hedy Lamarr');

    // The whole history as the server stores it (and the UI shows it): not a byte of the facts.
    const stored = Buffer.from(temporal.api.history.v1.History.encode(history).finish());
    for (const plain of PLAINTEXTS) expect(stored.includes(plain), plain).to.equal(false);

    // Every payload is the codec's ciphertext, labelled with the key that encrypted it.
    const payloads = payloadsOf(history.events);
    expect(payloads.length).to.be.greaterThan(5);
    const { codec } = getStack().runtime.temporal;
    for (const payload of payloads) {
      expect(utf8(payload.metadata?.encoding)).to.equal(ENCRYPTED_ENCODING);
      expect(utf8(payload.metadata?.[KEY_ID_METADATA])).to.equal(codec.keyId);
      // Sealed with the tenant's own data key: the input names the workspace, the rest is its workflow's.
      expect(utf8(payload.metadata?.[WORKSPACE_METADATA])).to.equal(shared.tenant.workspace_id);
    }
    // Decrypted, the same payloads do hold the facts: the check above is not vacuous.
    const decrypted = payloads.map((payload) => utf8(codec.open(payload).data)).join('\n');
    expect(decrypted).to.contain('Hedy Lamarr');

    // The client (with the codec) reads the result the API answered with.
    const result = await handle.result();
    expect(result.correlation_id).to.equal(response.body.correlation_id);
    expect(result.nodes.map((node: { id: string }) => node.id)).to.deep.equal(
      response.body.nodes.map((node: { id: string }) => node.id),
    );
    expect(result.answer).to.equal(response.body.answer);
  });

  it('a workflow started by hand with plain JSON fails at once and writes nothing (review M-1)', async () => {
    const { runtime, config, ownerDataSource } = getStack();
    const plainClient = new Client({ connection: runtime.temporal.connection, namespace: config.TEMPORAL_NAMESPACE });
    const workflowId = `side-door-${randomUUID()}`;
    const name = `written-without-credential-${randomUUID().slice(0, 8)}.ts`;
    await plainClient.workflow.start('codeIndexWorkflow', {
      workflowId,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      args: [
        {
          workspaceId: shared.tenant.workspace_id,
          batch: {
            repo: 'side-door',
            run_id: randomUUID(),
            final: false,
            symbols: [{ kind: 'file', path: name, name, doc: 'no Weft credential was used' }],
            edges: [],
            commits: [],
          },
        },
      ],
    });
    const handle = runtime.temporal.client.workflow.getHandle(workflowId);
    const failure = await handle.result().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).to.be.instanceOf(WorkflowFailedError);
    const cause = (failure as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause.type).to.equal(REFUSED_PAYLOAD_FAILURE);
    expect(cause.nonRetryable).to.equal(true);
    // Failed on its first task: no activity was ever scheduled, and the node does not exist.
    const events = (await handle.fetchHistory()).events ?? [];
    expect(events.some((event) => event.activityTaskScheduledEventAttributes)).to.equal(false);
    const rows = await ownerDataSource.query(`SELECT 1 FROM nodes WHERE workspace_id = $1 AND name = $2`, [
      shared.tenant.workspace_id,
      name,
    ]);
    expect(rows).to.have.length(0);
  });

  it("codeIndexWorkflow carries the id of a batch Weft stored: another workspace's id applies nothing", async () => {
    const { runtime } = getStack();
    // A batch tenant B really stored, named in a workflow of tenant A (sealed with A's key, as a
    // tenant's own codec could): the row is not A's, so the activity finds nothing and the run fails.
    const ingest = await as(other.tenant.api_key).post('/v1/code/ingest', {
      repo: 'sealed-elsewhere',
      run_id: randomUUID(),
      symbols: [{ kind: 'file', path: 'b.ts', name: 'b.ts' }],
      edges: [],
      commits: [],
    });
    expect(ingest.status).to.equal(200);
    const [row] = await getStack().ownerDataSource.query(
      `SELECT id, batch, result FROM code_index_batches WHERE workspace_id = $1 AND repo = 'sealed-elsewhere'`,
      [other.tenant.workspace_id],
    );
    // Applied once: the batch is dropped, its result kept.
    expect(row.batch).to.equal(null);
    expect(row.result.created).to.equal(1);
    const input = {
      workspaceId: shared.tenant.workspace_id,
      batchId: row.id,
      repo: 'stolen',
      counts: { symbols: 1, edges: 0, commits: 0, final: false },
    };
    const handle = await runtime.temporal.workflows.start(codeIndexWorkflow, input);
    const failure = await handle.result().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).to.be.instanceOf(WorkflowFailedError);
    expect(JSON.stringify(findFailureDetails(failure))).to.contain('Code batch not found');
    const rows = await getStack().ownerDataSource.query(
      `SELECT 1 FROM code_symbols WHERE workspace_id = $1 AND repo = 'stolen'`,
      [shared.tenant.workspace_id],
    );
    expect(rows).to.have.length(0);
  });

  it('a merge review refuses a decision update in plain JSON, or sealed for another workspace', async () => {
    const { runtime, config } = getStack();
    const api = as(shared.tenant.api_key);
    for (const name of ['Grace Hopper', 'grace hopper']) {
      expect((await api.post('/v1/ontology/nodes', { type: 'person', name })).status).to.equal(201);
    }
    const candidate = await eventually(
      async () => {
        const listed = await api.get('/v1/ontology/merges');
        return (listed.body as { id: string }[])[0];
      },
      { what: 'a merge candidate' },
    );
    const workflowId = `merge-${candidate.id}`;
    const described = await startedWorkflow(workflowId);
    expect(described.typedSearchAttributes.get(KIND_ATTRIBUTE)).to.equal('mergeCandidate');
    const decision = {
      decision: 'approve',
      workspaceId: shared.tenant.workspace_id,
      userId: randomUUID(),
      notes: null,
    };
    const plainClient = new Client({ connection: runtime.temporal.connection, namespace: config.TEMPORAL_NAMESPACE });
    const refusedPlain = await plainClient.workflow
      .getHandle(workflowId)
      .executeUpdate('decideMerge', { args: [decision] })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refusedPlain).to.be.instanceOf(WorkflowUpdateFailedError);
    // Sealed with tenant B's key (it names B), sent into A's review: refused as well.
    const foreign = { ...decision, workspaceId: other.tenant.workspace_id };
    const refusedForeign = await runtime.temporal.client.workflow
      .getHandle(workflowId)
      .executeUpdate('decideMerge', { args: [foreign] })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refusedForeign).to.be.instanceOf(WorkflowUpdateFailedError);
    for (const refused of [refusedPlain, refusedForeign]) {
      expect(String((refused as WorkflowUpdateFailedError).cause?.message)).to.match(/^Update refused/);
    }
    const [row] = await getStack().ownerDataSource.query(`SELECT status FROM merge_candidates WHERE id = $1`, [
      candidate.id,
    ]);
    expect(row.status).to.equal('pending');
  });

  it('search attributes say what an execution is without a codec: kind, workspace, status, wait', async () => {
    const { client } = getStack().runtime.temporal;
    const prompt = await shared.handle.describe();
    expect(prompt.typedSearchAttributes.get(KIND_ATTRIBUTE)).to.equal('prompt');
    expect(prompt.typedSearchAttributes.get(WORKSPACE_ID_ATTRIBUTE)).to.equal(shared.tenant.workspace_id);

    const api = as(shared.tenant.api_key);
    const steps = [{ tool: 'billing.credits_balance' }, { tool: 'billing.credits_balance', requires_approval: true }];
    const dispatched = await api.post('/v1/runs', { agent: 'playbook', input: { steps } });
    expect(dispatched.status).to.equal(202);
    const handle = client.workflow.getHandle(`run-${dispatched.body.execution_id}`);
    const waiting = await eventually(
      async () => {
        const described = await describeOnceStarted(handle);
        return described?.typedSearchAttributes.get(WAITING_FOR_ATTRIBUTE) !== undefined && described;
      },
      { what: 'WeftWaitingFor' },
    );
    expect(waiting.typedSearchAttributes.get(KIND_ATTRIBUTE)).to.equal('run');
    expect(waiting.typedSearchAttributes.get(RUN_STATUS_ATTRIBUTE)).to.equal('AWAITING_APPROVAL');
    // The approval the API lists for the run, and its step's tool (issue 23 item 1).
    const detail = await api.get(`/v1/runs/${dispatched.body.execution_id}`);
    expect(detail.status).to.equal(200);
    const approvalId: string = detail.body.approvals[0].approval_id;
    const waitingFor = `approval ${approvalId}: billing.credits_balance`;
    expect(waiting.typedSearchAttributes.get(WAITING_FOR_ATTRIBUTE)).to.equal(waitingFor);
    // An operator's query in the UI or `temporal workflow list --query` (visibility is eventually consistent).
    const query =
      `WeftKind = "run" AND WeftWaitingFor = "${waitingFor}" ` +
      `AND WeftWorkspaceId = "${shared.tenant.workspace_id}"`;
    await eventually(
      async () => {
        for await (const execution of client.workflow.list({ query })) {
          if (execution.workflowId === handle.workflowId) return true;
        }
        return false;
      },
      { what: 'the waiting run in a visibility query' },
    );
    // The CLI's `workflow stack` and `workflow metadata` send `{}` to the codec: they work with it.
    const { baseUrl, config } = getStack();
    const operatorToken = (await mintOperatorToken(getStack().ownerDataSource, { label: 'cli' })).token;
    for (const command of ['stack', 'metadata']) {
      const { stdout } = await run(temporalCliPath(), [
        'workflow',
        command,
        '--workflow-id',
        handle.workflowId,
        '--address',
        config.TEMPORAL_ADDRESS,
        '--namespace',
        config.TEMPORAL_NAMESPACE,
        '--codec-endpoint',
        `${baseUrl}/v1/temporal-codec`,
        '--codec-auth',
        `Bearer ${operatorToken}`,
      ]);
      expect(stdout, command).to.be.a('string');
    }
    await api.post(`/v1/runs/${dispatched.body.execution_id}/cancel`, {});
    await handle.result();
    const ended = await handle.describe();
    expect(ended.typedSearchAttributes.get(RUN_STATUS_ATTRIBUTE)).to.equal('CANCELLED');
    expect(ended.typedSearchAttributes.get(WAITING_FOR_ATTRIBUTE)).to.equal(undefined);
  });

  describe('the codec endpoint (Temporal codec server protocol)', () => {
    let operator: string;
    before(async () => {
      operator = (await mintOperatorToken(getStack().ownerDataSource, { label: 'codec test' })).token;
    });
    const bodyOf = (history: History) => ({ payloads: payloadsOf(history.events).map(toJson) });
    const textOf = (response: { body: { payloads: { data: string }[] } }) =>
      response.body.payloads.map((payload) => Buffer.from(payload.data, 'base64').toString('utf8')).join('\n');

    it("opens the credential's own workspace's payloads and hands every other payload back unchanged", async () => {
      const mine = bodyOf(shared.history);
      const theirs = bodyOf(other.history);
      for (const token of [shared.tenant.api_key, shared.tenant.user_jwt]) {
        const own = await as(token).post('/v1/temporal-codec/decode', mine, {
          'X-Namespace': getStack().config.TEMPORAL_NAMESPACE,
        });
        expect(own.status).to.equal(200);
        expect(textOf(own)).to.contain('Hedy Lamarr');
        const encodings = own.body.payloads.map((payload: { metadata: { encoding: string } }) =>
          Buffer.from(payload.metadata.encoding, 'base64').toString('utf8'),
        );
        expect(encodings).to.include('json/plain');

        // Tenant B's history, posted by tenant A: 200, and every payload still ciphertext.
        const foreign = await as(token).post('/v1/temporal-codec/decode', theirs);
        expect(foreign.status).to.equal(200);
        expect(foreign.body).to.deep.equal(theirs);
        expect(textOf(foreign)).not.to.contain('Hedy Lamarr');
      }
    });

    it('an operator token (weft operator token) opens every workspace; nothing else accepts it', async () => {
      for (const tenant of [shared, other]) {
        const decoded = await as(operator).post('/v1/temporal-codec/decode', bodyOf(tenant.history));
        expect(decoded.status).to.equal(200);
        expect(textOf(decoded)).to.contain('Hedy Lamarr');
      }
      expect((await as(operator).get('/v1/ontology/nodes')).status).to.equal(401);
      const revoked = await mintOperatorToken(getStack().ownerDataSource, { label: 'revoked' });
      await revokeOperatorToken(getStack().ownerDataSource, revoked.id);
      expect((await as(revoked.token).post('/v1/temporal-codec/decode', {})).status).to.equal(401);
    });

    it('`weft operator token` and `weft operator revoke` work as an operator runs them', async function () {
      this.timeout(60_000);
      // The CLI as a user runs it, on the owner connection of the test database.
      const weft = (...args: string[]) =>
        run(path.resolve(__dirname, '../node_modules/.bin/tsx'), ['src/cli/main.ts', ...args], {
          cwd: path.resolve(__dirname, '..'),
          env: process.env,
        });
      const minted = JSON.parse((await weft('operator', 'token', '--label', 'cli test', '--days', '1')).stdout);
      expect(minted.token).to.match(/^weft_op_/);
      expect(new Date(minted.expires_at).getTime()).to.be.greaterThan(Date.now());
      const decoded = await as(minted.token).post('/v1/temporal-codec/decode', bodyOf(other.history));
      expect(textOf(decoded)).to.contain('Hedy Lamarr');
      await weft('operator', 'revoke', '--id', minted.id);
      expect((await as(minted.token).post('/v1/temporal-codec/decode', {})).status).to.equal(401);
    });

    it('no user JWT, bootstrap key or self-service key holds temporal:decode (asking for it is a 422)', async () => {
      const { user_jwt, api_key } = shared.tenant;
      for (const token of [user_jwt, api_key]) {
        const minted = await as(token).post('/v1/auth/me/api-keys', { name: 'ui', scopes: ['temporal:decode'] });
        expect(minted.status).to.equal(422);
        expect(JSON.stringify(minted.body)).to.contain('weft operator token');
      }
      const keys = await as(user_jwt).get('/v1/auth/me/api-keys');
      expect(keys.status).to.equal(200);
      for (const key of keys.body) expect(key.scopes).not.to.include('temporal:decode');
      const scopes = await as(user_jwt).get('/v1/auth/me/api-keys/scopes');
      expect(scopes.status).to.equal(200);
      expect(JSON.stringify(scopes.body)).not.to.contain('temporal:decode');
      // Encoding is an operator's: a tenant could otherwise seal input for a workflow it starts on Temporal.
      const original = { payloads: [{ metadata: { encoding: b64('json/plain') }, data: b64('"Hedy Lamarr"') }] };
      expect((await as(user_jwt).post('/v1/temporal-codec/encode', original)).status).to.equal(403);
    });

    it('a payload relabelled with another workspace does not open: it comes back unchanged', async () => {
      const [payload] = payloadsOf(other.history.events);
      const relabelled = toJson(payload!);
      relabelled.metadata[WORKSPACE_METADATA] = b64(shared.tenant.workspace_id);
      const body = { payloads: [relabelled] };
      for (const token of [shared.tenant.api_key, operator]) {
        const response = await as(token).post('/v1/temporal-codec/decode', body);
        expect(response.status).to.equal(200);
        expect(response.body).to.deep.equal(body);
      }
    });

    it('encodes (operator) with the key of the workspace the value names, and decodes back', async () => {
      const value = JSON.stringify({ workspaceId: shared.tenant.workspace_id, name: 'Hedy Lamarr' });
      const original = { payloads: [{ metadata: { encoding: b64('json/plain') }, data: b64(value) }] };
      const encoded = await as(operator).post('/v1/temporal-codec/encode', original);
      expect(encoded.status).to.equal(200);
      const [sealed] = encoded.body.payloads;
      expect(Buffer.from(sealed.metadata.encoding, 'base64').toString()).to.equal(ENCRYPTED_ENCODING);
      expect(Buffer.from(sealed.metadata[WORKSPACE_METADATA], 'base64').toString()).to.equal(
        shared.tenant.workspace_id,
      );
      expect(Buffer.from(sealed.data, 'base64').toString('latin1')).not.to.contain('Hedy');
      const decoded = await as(shared.tenant.api_key).post('/v1/temporal-codec/decode', encoded.body);
      expect(decoded.status).to.equal(200);
      expect(decoded.body).to.deep.equal(original);
      expect((await as(other.tenant.api_key).post('/v1/temporal-codec/decode', encoded.body)).body).to.deep.equal(
        encoded.body,
      );
    });

    it('takes `{}` as no payloads (what the Temporal CLI sends for `workflow metadata` and `stack`)', async () => {
      for (const [token, path] of [
        [shared.tenant.api_key, '/v1/temporal-codec/decode'],
        [operator, '/v1/temporal-codec/decode'],
        [operator, '/v1/temporal-codec/encode'],
      ] as const) {
        const response = await as(token).post(path, {});
        expect(response.status, path).to.equal(200);
        expect(response.body).to.deep.equal({ payloads: [] });
      }
    });

    it('refuses a key without ontology:read (403) and no credential (401)', async () => {
      const body = { payloads: payloadsOf(shared.history.events).slice(0, 1).map(toJson) };
      expect((await request('POST', '/v1/temporal-codec/decode', { body })).status).to.equal(401);
      const narrow = await as(shared.tenant.user_jwt).post('/v1/auth/me/api-keys', {
        name: 'billing',
        scopes: ['billing:read'],
      });
      expect((await as(narrow.body.token).post('/v1/temporal-codec/decode', body)).status).to.equal(403);
    });

    it("npm start's dev UI path: every workspace from loopback without a credential, only when enabled", async () => {
      const { runtime } = getStack();
      const devApp = createApp({ ...runtime, config: { ...runtime.config, TEMPORAL_UI_DEV_CODEC: true } });
      const server = devApp.listen(0, '127.0.0.1');
      await new Promise<void>((resolve) => server.once('listening', () => resolve()));
      try {
        const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        for (const tenant of [shared, other]) {
          const response = await fetch(`${base}/v1/temporal-codec/dev/decode`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', Origin: 'http://127.0.0.1:8233' },
            body: JSON.stringify(bodyOf(tenant.history)),
          });
          expect(response.status).to.equal(200);
          // The dev server's UI origin may call it from the browser.
          expect(response.headers.get('access-control-allow-origin')).to.equal('http://127.0.0.1:8233');
          expect(textOf({ body: (await response.json()) as never })).to.contain('Hedy Lamarr');
        }
      } finally {
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      // The suite's own app (the flag off, as in production, where loadConfig refuses it) has no such path.
      expect((await request('POST', '/v1/temporal-codec/dev/decode', { body: {} })).status).to.equal(404);
      expect(() => loadConfig({ NODE_ENV: 'production', TEMPORAL_UI_DEV_CODEC: 'true' })).to.throw(
        /TEMPORAL_UI_DEV_CODEC/,
      );
    });

    it("the dev server npm start starts points its UI's codec at that path (--ui-codec-endpoint)", async function () {
      this.timeout(90_000);
      const [port, uiPort] = [await freePort(), await freePort()];
      const endpoint = 'http://127.0.0.1:8080/v1/temporal-codec/dev';
      const server = await startDevServer({ address: `127.0.0.1:${port}`, uiPort, uiCodecEndpoint: endpoint });
      try {
        const settings = await eventually(
          async () => {
            const response = await fetch(`http://127.0.0.1:${uiPort}/api/v1/settings`).catch(() => undefined);
            return response?.ok ? ((await response.json()) as { Codec: { Endpoint: string } }) : undefined;
          },
          { what: 'the UI settings' },
        );
        expect(settings.Codec.Endpoint).to.equal(endpoint);
      } finally {
        await server.stop();
      }
    });

    it('lets the configured Temporal UI origin call it from a browser (CORS), and no other origin', async () => {
      const origin = getStack().config.TEMPORAL_UI_ORIGIN!;
      const preflight = (from: string) =>
        request('OPTIONS', '/v1/temporal-codec/decode', {
          headers: {
            Origin: from,
            'Access-Control-Request-Method': 'POST',
            'Access-Control-Request-Headers': 'authorization,content-type,x-namespace',
          },
        });
      const allowed = await preflight(origin);
      expect(allowed.status).to.equal(204);
      expect(allowed.headers.get('access-control-allow-origin')).to.equal(origin);
      expect(allowed.headers.get('access-control-allow-headers')?.toLowerCase()).to.contain('x-namespace');
      expect(allowed.headers.get('access-control-allow-methods')).to.contain('POST');

      const other = await preflight('https://elsewhere.example');
      expect(other.headers.get('access-control-allow-origin')).to.equal(null);

      const decoded = await request('POST', '/v1/temporal-codec/decode', {
        token: operator,
        body: { payloads: [] },
        headers: { Origin: origin },
      });
      expect(decoded.status).to.equal(200);
      expect(decoded.headers.get('access-control-allow-origin')).to.equal(origin);
      // The rest of the API sends no CORS headers.
      const health = await request('GET', '/v1/health', { headers: { Origin: origin } });
      expect(health.headers.get('access-control-allow-origin')).to.equal(null);
    });

    it('serves the Temporal CLI: `temporal workflow show --codec-endpoint` reads the decrypted history', async () => {
      const { config, baseUrl } = getStack();
      const args = [
        'workflow',
        'show',
        '--workflow-id',
        `prompt-${shared.response.body.correlation_id}`,
        '--address',
        config.TEMPORAL_ADDRESS,
        '--namespace',
        config.TEMPORAL_NAMESPACE,
        '--output',
        'json',
      ];
      // The CLI prints payloads in proto JSON: metadata and data base64.
      const show = async (extra: string[] = []) => {
        const { stdout } = await run(temporalCliPath(), [...args, ...extra], { maxBuffer: 16 * 1024 * 1024 });
        const payloads = payloadsOf(JSON.parse(stdout).events) as unknown as { metadata: { encoding: string } }[];
        return {
          encodings: new Set(payloads.map((payload) => Buffer.from(payload.metadata.encoding, 'base64').toString())),
          text: payloads.map((payload) => Buffer.from((payload as { data?: string }).data ?? '', 'base64')).join('\n'),
        };
      };
      const plain = await show();
      expect(plain.text).not.to.contain('Hedy Lamarr');
      expect(plain.encodings).to.include(ENCRYPTED_ENCODING);
      const codec = ['--codec-endpoint', `${baseUrl}/v1/temporal-codec`, '--codec-auth', `Bearer ${operator}`];
      const decoded = await show(codec);
      expect(decoded.text).to.contain('Hedy Lamarr');
      expect(decoded.encodings).not.to.include(ENCRYPTED_ENCODING);
    });

    it('tells the Temporal CLI at once that its credential was refused; a script still gets 401/403', async () => {
      const { config, baseUrl } = getStack();
      const narrow = await as(shared.tenant.user_jwt).post('/v1/auth/me/api-keys', {
        name: 'no decode right',
        scopes: ['billing:read'],
      });
      const started = Date.now();
      const { stdout } = await run(
        temporalCliPath(),
        [
          'workflow',
          'show',
          '--workflow-id',
          `prompt-${shared.response.body.correlation_id}`,
          '--address',
          config.TEMPORAL_ADDRESS,
          '--namespace',
          config.TEMPORAL_NAMESPACE,
          '--output',
          'json',
          '--codec-endpoint',
          `${baseUrl}/v1/temporal-codec`,
          '--codec-auth',
          `Bearer ${narrow.body.token}`,
        ],
        { maxBuffer: 16 * 1024 * 1024 },
      );
      // Any other answer than a 200 the CLI retries for 10 s and then prints "context deadline exceeded".
      expect(Date.now() - started).to.be.below(5_000);
      const texts = payloadsOf(JSON.parse(stdout).events).map((payload) =>
        Buffer.from((payload as { data?: string }).data ?? '', 'base64').toString(),
      );
      expect(texts.length).to.be.greaterThan(0);
      for (const text of texts) {
        expect(JSON.parse(text)).to.deep.equal({
          weft_codec_refused: { status: 403, detail: 'Missing scope ontology:read' },
        });
      }
      // The same call from a script (no X-Namespace) keeps its status; a codec client's carries it in a header.
      const body = { payloads: payloadsOf(shared.history.events).slice(0, 1).map(toJson) };
      expect((await as(narrow.body.token).post('/v1/temporal-codec/decode', body)).status).to.equal(403);
      const asClient = await request('POST', '/v1/temporal-codec/decode', {
        body,
        headers: { 'X-Namespace': config.TEMPORAL_NAMESPACE, Authorization: 'Bearer not-a-credential' },
      });
      expect(asClient.status).to.equal(200);
      expect(asClient.headers.get('weft-codec-refused')).to.equal('401');
      expect(JSON.stringify(asClient.body)).not.to.contain(body.payloads[0]!.data);
    });

    it('is in the OpenAPI document', async () => {
      const document = await request('GET', '/v1/openapi.json');
      expect(document.body.paths).to.have.property('/v1/temporal-codec/decode');
      expect(document.body.paths).to.have.property('/v1/temporal-codec/encode');
    });
  });
});
