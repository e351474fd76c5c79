import { expect } from 'chai';
import { as } from './helpers/http';
import { finished, runUntil } from './helpers/runs';
import { newTenant } from './helpers/tenants';

describe('runs: the llm agent with the local deterministic model', () => {
  it('chooses a tool from the goal, runs it through the registry, and answers', async () => {
    const { api_key } = await newTenant(7);
    const client = as(api_key);
    const dispatched = await client.post('/v1/runs', { agent: 'llm', input: { goal: 'check my credit balance' } });
    expect(dispatched.status).to.equal(202);
    const run = await finished(client, dispatched.body.execution_id);
    expect(run).to.include({ agent: 'llm', status: 'SUCCEEDED' });
    expect(run.steps.map((step: any) => [step.tool, step.status])).to.deep.equal([
      ['billing.credits_balance', 'SUCCEEDED'],
    ]);
    expect(run.output.answer).to.equal('billing.credits_balance answered: {"balance":7,"locked":false}');
  });

  it('waits for approval of every call under approval: all', async () => {
    const { api_key, user_jwt } = await newTenant();
    const client = as(api_key);
    const dispatched = await client.post('/v1/runs', {
      agent: 'llm',
      input: { goal: 'what is my balance', approval: 'all', max_steps: 2 },
    });
    const id = dispatched.body.execution_id;
    const waiting = await runUntil(client, id, (run) => run.approvals.length > 0, 'an approval');
    expect(waiting.status).to.equal('AWAITING_APPROVAL');
    expect(waiting.approvals[0].step.tool).to.equal('billing.credits_balance');
    await as(user_jwt).post(`/v1/approvals/${waiting.approvals[0].approval_id}/resolve`, { decision: 'APPROVED' });
    expect((await finished(client, id)).status).to.equal('SUCCEEDED');
  });

  it('answers at once when no tool fits, and refuses max_steps above 32 (422)', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const dispatched = await client.post('/v1/runs', { agent: 'llm', input: { goal: 'make coffee' } });
    const run = await finished(client, dispatched.body.execution_id);
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.steps).to.have.length(0);
    expect(run.output.answer).to.match(/No tool fits/);
    const tooMany = await client.post('/v1/runs', { agent: 'llm', input: { goal: 'balance', max_steps: 33 } });
    expect(tooMany.status).to.equal(422);
  });
});
