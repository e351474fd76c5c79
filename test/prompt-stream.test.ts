import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { as } from './helpers/http';
import { parseSse, postStream } from './helpers/sse';
import { getStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';

describe('POST /v1/ontology/prompt/stream', function () {
  this.timeout(30_000);

  it('in order: embedding, retrieval, llm_call, parse (start/done), done (narrative, citations); costs 3', async () => {
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

  it('reserves as stream-<id>:reserve, audits the call; a reused correlation id is 409 before streaming', async () => {
    const tenant = await newTenant(20);
    const correlationId = randomUUID();
    const open = () =>
      fetch(`${getStack().baseUrl}/v1/ontology/prompt/stream`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tenant.api_key}`,
          'content-type': 'application/json',
          'x-correlation-id': correlationId,
        },
        body: JSON.stringify({ prompt: 'Who is Grace Hopper?' }),
      });
    const first = await open();
    expect(first.status).to.equal(200);
    expect(parseSse(await first.text()).at(-1)?.event).to.equal('done');
    const owner = getStack().ownerDataSource;
    expect(
      await owner.query(`SELECT amount, idempotency_key FROM credit_ledger WHERE workspace_id = $1`, [
        tenant.workspace_id,
      ]),
    ).to.deep.equal([{ amount: -3, idempotency_key: `stream-${correlationId}:reserve` }]);
    expect(
      await owner.query(`SELECT prompt_kind, intent, status, credits_used FROM prompt_runs WHERE correlation_id = $1`, [
        correlationId,
      ]),
    ).to.deep.equal([{ prompt_kind: 'stream', intent: 'query', status: 'ok', credits_used: 3 }]);

    const again = await open();
    expect(again.status).to.equal(409);
    expect(again.headers.get('content-type')).to.match(/json/);
    expect(await creditBalance(tenant.tenant_id)).to.equal(17);
  });

  it('422 for a bad body', async () => {
    const tenant = await newTenant(10);
    expect((await postStream('/v1/ontology/prompt/stream', tenant.api_key, { prompt: '' })).status).to.equal(422);
  });
  // A client leaving mid-stream is tested in prompt-openai.test.ts, where the model call is slow
  // enough to leave during it.
});
