import { expect } from 'chai';
import { z } from 'zod';
import { loadConfig } from '../src/platform/config';
import { createEmbeddingProvider } from '../src/platform/llm/embedding/factory';
import { createLocalEmbeddingProvider, localEmbedding } from '../src/platform/llm/embedding/local';
import { createOpenAIEmbeddingProvider } from '../src/platform/llm/embedding/openai';
import { UpstreamError } from '../src/platform/llm/errors';
import { createOpenAIClient } from '../src/platform/llm/openai-client';
import { openAIStructuredOutput } from '../src/platform/llm/structured-output';
import type { FakeOpenAI } from './helpers/fake-openai';
import { startFakeOpenAI } from './helpers/fake-openai';

const cosine = (a: number[], b: number[]) => a.reduce((sum, value, i) => sum + value * b[i]!, 0);
const norm = (a: number[]) => Math.sqrt(cosine(a, a));

const openAIConfig = (baseUrl: string, overrides: Record<string, string> = {}) =>
  loadConfig({
    OPENAI_API_KEY: 'sk-test',
    OPENAI_BASE_URL: baseUrl,
    OPENAI_MAX_RETRIES: '0',
    OPENAI_TIMEOUT_MS: '2000',
    ...overrides,
  });

async function upstreamFailure(promise: Promise<unknown>): Promise<UpstreamError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, 'expected an UpstreamError').to.be.instanceOf(UpstreamError);
  return error as UpstreamError;
}

describe('local embedding provider', () => {
  it('is deterministic, 512-dimensional and unit length', async () => {
    const [a, b] = await createLocalEmbeddingProvider().embed(['Alice Smith', 'Alice Smith']);
    expect(a).to.have.length(512);
    expect(a).to.deep.equal(b);
    expect(norm(a!)).to.be.closeTo(1, 1e-9);
  });

  it('puts texts that share words close together and unrelated texts apart', () => {
    const query = localEmbedding('alice');
    expect(cosine(query, localEmbedding('Alice Smith'))).to.be.greaterThan(0.7);
    expect(cosine(query, localEmbedding('quarterly revenue report'))).to.be.lessThan(0.2);
    expect(cosine(localEmbedding('payment service'), localEmbedding('payments service'))).to.be.greaterThan(0.6);
  });

  it('gives text without words a unit vector too (never NaN)', () => {
    expect(norm(localEmbedding('!!!'))).to.be.closeTo(1, 1e-9);
    expect(norm(localEmbedding(''))).to.be.closeTo(1, 1e-9);
  });
});

describe('OpenAI provider against a fake OpenAI-compatible server', () => {
  let fake: FakeOpenAI;
  beforeEach(async () => {
    fake = await startFakeOpenAI();
  });
  afterEach(async () => {
    await fake.close();
  });

  it('is chosen when OPENAI_API_KEY is set, the local one otherwise', () => {
    expect(createEmbeddingProvider(openAIConfig(fake.baseUrl)).name).to.equal('openai');
    expect(createEmbeddingProvider(loadConfig({})).name).to.equal('local');
  });

  it('embeds through the real client with dimensions 512 and the configured model', async () => {
    const provider = createOpenAIEmbeddingProvider(
      openAIConfig(fake.baseUrl, { OPENAI_EMBEDDING_MODEL: 'embed-test' }),
    );
    const vectors = await provider.embed(['first text', 'second text']);
    expect(vectors).to.have.length(2);
    for (const vector of vectors) {
      expect(vector).to.have.length(512);
      expect(vector.every((value) => typeof value === 'number')).to.equal(true);
    }
    expect(vectors[0]).to.deep.equal(localEmbedding('first text'));
    const [sent] = fake.requests;
    expect(sent!.path).to.equal('/v1/embeddings');
    expect(sent!.authorization).to.equal('Bearer sk-test');
    expect(sent!.body).to.include({ model: 'embed-test', dimensions: 512, encoding_format: 'float' });
  });

  it('maps a 500 to a 502 UpstreamError after the configured retries', async () => {
    fake.behave({ kind: 'status', status: 500 });
    const provider = createOpenAIEmbeddingProvider(openAIConfig(fake.baseUrl, { OPENAI_MAX_RETRIES: '1' }));
    const error = await upstreamFailure(provider.embed(['x']));
    expect(error.code).to.equal('upstream_unavailable');
    expect(error.detail).to.deep.equal({ error: 'upstream_unavailable', provider: 'openai', reason: 'http_error' });
    expect(fake.requests).to.have.length(2);
  });

  it('maps a timeout to a 502 UpstreamError', async () => {
    fake.behave({ kind: 'delay', ms: 5000 });
    const provider = createOpenAIEmbeddingProvider(openAIConfig(fake.baseUrl, { OPENAI_TIMEOUT_MS: '200' }));
    const started = Date.now();
    const error = await upstreamFailure(provider.embed(['x']));
    expect(error.code).to.equal('upstream_unavailable');
    expect(error.reason).to.equal('timeout');
    expect(Date.now() - started).to.be.lessThan(3000);
  });

  it('rejects vectors of the wrong size as an invalid response', async () => {
    fake.behave({ kind: 'wrong_dimensions' });
    const error = await upstreamFailure(createOpenAIEmbeddingProvider(openAIConfig(fake.baseUrl)).embed(['x']));
    expect(error.reason).to.equal('invalid_response');
  });

  it('maps an unreachable server to a 502 UpstreamError', async () => {
    await fake.close();
    const error = await upstreamFailure(createOpenAIEmbeddingProvider(openAIConfig(fake.baseUrl)).embed(['x']));
    expect(error.reason).to.equal('connection');
    fake = await startFakeOpenAI();
  });

  describe('structured outputs', () => {
    const Intent = z.object({ intent: z.enum(['update', 'query', 'both']), confidence: z.number() });

    it('sends a strict JSON schema and returns the zod-validated answer', async () => {
      fake.chatReplies.push(JSON.stringify({ intent: 'query', confidence: 0.9 }));
      const client = createOpenAIClient(openAIConfig(fake.baseUrl));
      const answer = await openAIStructuredOutput(client, {
        model: 'chat-test',
        name: 'intent',
        schema: Intent,
        messages: [{ role: 'user', content: 'who is alice?' }],
      });
      expect(answer).to.deep.equal({ intent: 'query', confidence: 0.9 });
      const sent = fake.requests[0]!.body;
      expect(sent.model).to.equal('chat-test');
      expect(sent.response_format.type).to.equal('json_schema');
      expect(sent.response_format.json_schema.strict).to.equal(true);
      expect(sent.response_format.json_schema.schema.properties).to.have.keys('intent', 'confidence');
    });

    it('turns an answer that does not match the schema into a 502', async () => {
      fake.chatReplies.push(JSON.stringify({ intent: 'dance' }), 'not json');
      const client = createOpenAIClient(openAIConfig(fake.baseUrl));
      const request = {
        model: 'm',
        name: 'intent',
        schema: Intent,
        messages: [{ role: 'user' as const, content: 'x' }],
      };
      expect((await upstreamFailure(openAIStructuredOutput(client, request))).reason).to.equal('invalid_response');
      expect((await upstreamFailure(openAIStructuredOutput(client, request))).reason).to.equal('invalid_response');
    });
  });
});
