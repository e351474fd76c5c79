import { expect } from 'chai';
import http from 'node:http';
import { as } from './helpers/http';
import { postStream } from './helpers/sse';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

const balanceOf = async (tenantId: string) =>
  Number((await getStack().ownerDataSource.query(`SELECT credit_balance FROM tenants WHERE id = $1`, [tenantId]))[0].credit_balance);

const waitFor = async (condition: () => Promise<boolean>, ms = 5000) => {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe('POST /v1/ontology/prompt/stream', function () {
  this.timeout(30_000);

  it('emits embedding, retrieval, llm_call and parse (start, done) in order, then done with narrative and citations; costs 3', async () => {
    const tenant = await newTenant(20);
    const seeded = await as(tenant.api_key).post('/v1/ontology/prompt', { prompt: 'Grace Hopper works at Remington Rand.' });
    const grace = seeded.body.nodes.find((node: { name: string }) => node.name === 'Grace Hopper');

    const response = await postStream('/v1/ontology/prompt/stream', tenant.api_key, { prompt: 'Who is Grace Hopper?' });
    expect(response.status).to.equal(200);
    expect(response.headers.get('content-type')).to.match(/^text\/event-stream/);
    const sequence = response.events.map((event) => `${event.event}:${event.data.status ?? ''}`);
    expect(sequence).to.deep.equal([
      'embedding:start', 'embedding:done', 'retrieval:start', 'retrieval:done',
      'llm_call:start', 'llm_call:done', 'parse:start', 'parse:done', 'done:',
    ]);
    const done = response.events.at(-1)!.data;
    expect(done.narrative).to.contain('Grace Hopper');
    expect(done.citations).to.include(grace.id);
    expect(done.credit_receipt).to.include({ kind: 'ontology.prompt.query', amount: 3 });
    expect(await balanceOf(tenant.tenant_id)).to.equal(20 - 5 - 3);
  });

  it('402 (JSON, before the stream opens) when credits are short', async () => {
    const tenant = await newTenant(2);
    const response = await postStream('/v1/ontology/prompt/stream', tenant.api_key, { prompt: 'Who is Grace Hopper?' });
    expect(response.status).to.equal(402);
    expect(response.json).to.deep.equal({ detail: { error: 'insufficient_credits', required: 3, available: 2, kind: 'ontology.prompt.query' } });
    expect(await balanceOf(tenant.tenant_id)).to.equal(2);
  });

  it('422 for a bad body', async () => {
    const tenant = await newTenant(10);
    expect((await postStream('/v1/ontology/prompt/stream', tenant.api_key, { prompt: '' })).status).to.equal(422);
  });

  it('a client that disconnects mid-stream leaves no reservation unsettled', async () => {
    const tenant = await newTenant(10);
    const url = new URL(`${getStack().baseUrl}/v1/ontology/prompt/stream`);
    await new Promise<void>((resolve, reject) => {
      const request = http.request(
        url,
        { method: 'POST', headers: { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' } },
        (response) => {
          // Leave as soon as the first event arrives.
          response.once('data', () => {
            request.destroy();
            resolve();
          });
        },
      );
      request.on('error', () => resolve());
      request.end(JSON.stringify({ prompt: 'Who is Grace Hopper?' }));
      setTimeout(() => reject(new Error('no event')), 10_000);
    });
    // Either the answer was delivered before the close was seen (charge stands), or it was refunded;
    // never a reservation without its settlement.
    await waitFor(async () => {
      const rows: { amount: number; linked_event_id: string | null }[] = await getStack().ownerDataSource.query(
        `SELECT amount, linked_event_id FROM credit_ledger WHERE workspace_id = $1`,
        [tenant.workspace_id],
      );
      const reservations = rows.filter((row) => row.amount < 0);
      const refunds = rows.filter((row) => row.amount > 0);
      return reservations.length === 1 && refunds.length === 1;
    });
    expect(await balanceOf(tenant.tenant_id)).to.equal(10);
  });
});
