import { expect } from 'chai';
import { as } from './helpers/http';
import { postStream } from './helpers/sse';
import { creditBalance, newTenant } from './helpers/tenants';

describe('POST /v1/ontology/prompt/stream', function () {
  this.timeout(30_000);

  it('emits embedding, retrieval, llm_call and parse (start, done) in order, then done with narrative and citations; costs 3', async () => {
    const tenant = await newTenant(20);
    const seeded = await as(tenant.api_key).post('/v1/ontology/prompt', {
      prompt: 'Grace Hopper works at Remington Rand.',
    });
    const grace = seeded.body.nodes.find((node: { name: string }) => node.name === 'Grace Hopper');

    const response = await postStream('/v1/ontology/prompt/stream', tenant.api_key, { prompt: 'Who is Grace Hopper?' });
    expect(response.status).to.equal(200);
    expect(response.headers.get('content-type')).to.match(/^text\/event-stream/);
    const sequence = response.events.map((event) => `${event.event}:${event.data.status ?? ''}`);
    expect(sequence).to.deep.equal([
      'embedding:start',
      'embedding:done',
      'retrieval:start',
      'retrieval:done',
      'llm_call:start',
      'llm_call:done',
      'parse:start',
      'parse:done',
      'done:',
    ]);
    const done = response.events.at(-1)!.data;
    expect(done.narrative).to.contain('Grace Hopper');
    expect(done.citations).to.include(grace.id);
    expect(done.credit_receipt).to.include({ kind: 'ontology.prompt.query', amount: 3 });
    expect(await creditBalance(tenant.tenant_id)).to.equal(20 - 5 - 3);
  });

  it('402 (JSON, before the stream opens) when credits are short', async () => {
    const tenant = await newTenant(2);
    const response = await postStream('/v1/ontology/prompt/stream', tenant.api_key, { prompt: 'Who is Grace Hopper?' });
    expect(response.status).to.equal(402);
    expect(response.json).to.deep.equal({
      detail: { error: 'insufficient_credits', required: 3, available: 2, kind: 'ontology.prompt.query' },
    });
    expect(await creditBalance(tenant.tenant_id)).to.equal(2);
  });

  it('422 for a bad body', async () => {
    const tenant = await newTenant(10);
    expect((await postStream('/v1/ontology/prompt/stream', tenant.api_key, { prompt: '' })).status).to.equal(422);
  });
  // A client leaving mid-stream is tested in prompt-openai.test.ts, where the model call is slow
  // enough to leave during it.
});
