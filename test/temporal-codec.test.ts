import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { expect } from 'chai';
import { ENCRYPTED_ENCODING, KEY_ID_METADATA } from '../src/platform/temporal/codec';
import { temporalCliPath } from '../src/platform/temporal/dev-server';
import { as, request } from './helpers/http';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

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
  before(async () => {
    shared = await promptWithHistory();
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
    }
    // Decrypted, the same payloads do hold the facts: the check above is not vacuous.
    const decrypted = (await codec.decode(payloads)).map((payload) => utf8(payload.data)).join('\n');
    expect(decrypted).to.contain('Hedy Lamarr');

    // The client (with the codec) reads the result the API answered with.
    const result = await handle.result();
    expect(result.correlation_id).to.equal(response.body.correlation_id);
    expect(result.nodes.map((node: { id: string }) => node.id)).to.deep.equal(
      response.body.nodes.map((node: { id: string }) => node.id),
    );
    expect(result.answer).to.equal(response.body.answer);
  });

  describe('the codec endpoint (Temporal codec server protocol)', () => {
    const decoder = async () => {
      const { user_jwt } = shared.tenant;
      const key = await as(user_jwt).post('/v1/auth/me/api-keys', { name: 'temporal-ui', scopes: ['temporal:decode'] });
      expect(key.status).to.equal(201);
      return key.body.token as string;
    };

    it('decodes a history’s payloads for a credential with temporal:decode', async () => {
      const payloads = payloadsOf(shared.history.events);
      const response = await as(await decoder()).post(
        '/v1/temporal-codec/decode',
        { payloads: payloads.map(toJson) },
        { 'X-Namespace': getStack().config.TEMPORAL_NAMESPACE },
      );
      expect(response.status).to.equal(200);
      expect(response.body.payloads).to.have.length(payloads.length);
      const texts = response.body.payloads.map((payload: { data: string }) =>
        Buffer.from(payload.data, 'base64').toString('utf8'),
      );
      expect(texts.join('\n')).to.contain('Hedy Lamarr');
      const encodings = response.body.payloads.map((payload: { metadata: { encoding: string } }) =>
        Buffer.from(payload.metadata.encoding, 'base64').toString('utf8'),
      );
      expect(encodings).to.include('json/plain');
    });

    it('encodes and decodes back to the same payloads (a round trip over HTTP)', async () => {
      const token = await decoder();
      const original = { payloads: [{ metadata: { encoding: b64('json/plain') }, data: b64('"Hedy Lamarr"') }] };
      const encoded = await as(token).post('/v1/temporal-codec/encode', original);
      expect(encoded.status).to.equal(200);
      const [sealed] = encoded.body.payloads;
      expect(Buffer.from(sealed.metadata.encoding, 'base64').toString()).to.equal(ENCRYPTED_ENCODING);
      expect(Buffer.from(sealed.data, 'base64').toString('latin1')).not.to.contain('Hedy');
      const decoded = await as(token).post('/v1/temporal-codec/decode', encoded.body);
      expect(decoded.status).to.equal(200);
      expect(decoded.body).to.deep.equal(original);
    });

    it('refuses a credential without temporal:decode (403), no credential (401), a forged payload (400)', async () => {
      const { user_jwt } = shared.tenant;
      const narrow = await as(user_jwt).post('/v1/auth/me/api-keys', { name: 'reader', scopes: ['ontology:read'] });
      const body = { payloads: payloadsOf(shared.history.events).slice(0, 1).map(toJson) };
      expect((await as(narrow.body.token).post('/v1/temporal-codec/decode', body)).status).to.equal(403);
      expect((await as(narrow.body.token).post('/v1/temporal-codec/encode', body)).status).to.equal(403);
      expect((await request('POST', '/v1/temporal-codec/decode', { body })).status).to.equal(401);

      const forged = structuredClone(body);
      const data = Buffer.from(forged.payloads[0]!.data, 'base64');
      data[data.length - 1]! ^= 1;
      forged.payloads[0]!.data = data.toString('base64');
      const refused = await as(await decoder()).post('/v1/temporal-codec/decode', forged);
      expect(refused.status).to.equal(400);
      expect(refused.body.detail).to.be.a('string');
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
        token: await decoder(),
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
      const codec = ['--codec-endpoint', `${baseUrl}/v1/temporal-codec`, '--codec-auth', `Bearer ${await decoder()}`];
      const decoded = await show(codec);
      expect(decoded.text).to.contain('Hedy Lamarr');
      expect(decoded.encodings).not.to.include(ENCRYPTED_ENCODING);
    });

    it('is in the OpenAPI document', async () => {
      const document = await request('GET', '/v1/openapi.json');
      expect(document.body.paths).to.have.property('/v1/temporal-codec/decode');
      expect(document.body.paths).to.have.property('/v1/temporal-codec/encode');
    });
  });
});
