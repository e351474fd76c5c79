import { expect } from 'chai';
import { as } from './helpers/http';
import { useOpenAIStack } from './helpers/openai-stack';
import { finished, pendingApproval, succeeded } from './helpers/runs';
import { newTenant } from './helpers/tenants';

const GOAL = 'Remember that Ada Lovelace works at Analytical Engines Ltd.';
const FACT = 'Ada Lovelace works at Analytical Engines Ltd.';

describe('runs: the llm agent and the graph tools, local model (issue 40 item 6)', () => {
  it('remembers a fact under approval: none, writing the graph', async () => {
    const client = as((await newTenant(50)).api_key);
    const dispatched = await client.post('/v1/runs', { agent: 'llm', input: { goal: GOAL, approval: 'none' } });
    expect(dispatched.status, dispatched.text).to.equal(202);
    const run = await succeeded(client, dispatched.body.execution_id, { timeoutMs: 60_000 });
    expect(run.steps.map((step: any) => [step.tool, step.status, step.requires_approval])).to.deep.equal([
      ['ontology.remember', 'SUCCEEDED', false],
    ]);
    expect(run.steps[0].input).to.deep.equal({ text: FACT });
    const output = run.steps[0].output;
    expect(output.status).to.equal('applied');
    const ada = output.nodes.find((node: any) => node.name === 'Ada Lovelace');
    expect(ada).to.include({ created: true });
    expect(run.output.answer).to.match(/^ontology\.remember answered: /);
    // The node is in the graph, as a read tool sees it.
    const read = await client.post('/v1/cap/ontology.get_node', { node_id: ada.id });
    expect(read.status, read.text).to.equal(200);
    expect(read.body.result.node.name).to.equal('Ada Lovelace');
  });

  it('asks for approval of the write under approval: writes (the default), then writes', async () => {
    const { api_key, user_jwt } = await newTenant(50);
    const client = as(api_key);
    const dispatched = await client.post('/v1/runs', { agent: 'llm', input: { goal: GOAL } });
    const id = dispatched.body.execution_id;
    const approval = await pendingApproval(client, id);
    expect(approval.step).to.deep.include({ tool: 'ontology.remember', input: { text: FACT } });
    const waiting = (await client.get(`/v1/runs/${id}`)).body;
    expect(waiting.steps.map((step: any) => [step.status, step.requires_approval])).to.deep.equal([['PENDING', true]]);
    await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    const run = await succeeded(client, id, { timeoutMs: 60_000 });
    expect(run.steps[0].output.status).to.equal('applied');
  });

  it('stages the write where the workspace stages agents’ writes', async () => {
    const { api_key, user_jwt } = await newTenant(50);
    const staged = await as(user_jwt).patch('/v1/ontology/config', { staging: { agent_writes: true } });
    expect(staged.status, staged.text).to.equal(200);
    const client = as(api_key);
    const dispatched = await client.post('/v1/runs', { agent: 'llm', input: { goal: GOAL, approval: 'none' } });
    const run = await finished(client, dispatched.body.execution_id, { timeoutMs: 60_000 });
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.steps[0].output).to.include({ status: 'staged' });
    expect(run.steps[0].output.change_set_id).to.be.a('string');
    expect(run.steps[0].output.nodes).to.deep.equal([]);
  });
});

describe('runs: the llm agent and the graph tools on OpenAI tool calling (issue 40 item 6)', function () {
  this.timeout(60_000);
  const openai = useOpenAIStack();
  const client = (token: string) => as(token, openai.stack.baseUrl);

  it('offers every graph tool from the registry, and a graph write waits for approval under writes', async () => {
    const { api_key, user_jwt } = await newTenant(5);
    const c = client(api_key);
    const goal = 'Add Grace Hopper to the graph';
    openai.fake.scriptChat((_schema, body) => {
      if (body?.messages?.[1]?.content !== goal) return undefined;
      const answered = body.messages.filter((message: any) => message.role === 'tool').length;
      if (answered > 0) return { content: 'Added.' };
      return { toolCalls: [{ name: 'ontology_write_node', arguments: '{"type": "person", "name": "Grace Hopper"}' }] };
    });
    const dispatched = await c.post('/v1/runs', { agent: 'llm', input: { goal } });
    expect(dispatched.status, dispatched.text).to.equal(202);
    const id = dispatched.body.execution_id;
    const approval = await pendingApproval(c, id);
    expect(approval.step).to.deep.include({
      tool: 'ontology.write_node',
      input: { type: 'person', name: 'Grace Hopper' },
    });

    const requests = openai.fake.requests.filter(
      (request) => request.path === '/v1/chat/completions' && request.body?.messages?.[1]?.content === goal,
    );
    const offered: string[] = requests[0]!.body.tools.map((tool: any) => tool.function.name);
    // Every tool of the registry the run's credential may call, read and write alike (run-only tools may come on
    // top), but an approval's resolve: agents never approve their own steps (issue 42).
    const catalogue = (await c.get('/v1/cap')).body.tools.map((tool: any) => tool.name.replace('.', '_'));
    expect(catalogue).to.include('approvals_resolve');
    expect(offered).to.include.members(catalogue.filter((name: string) => name !== 'approvals_resolve'));
    expect(offered).to.not.include('approvals_resolve');
    for (const tool of [
      'ontology_remember',
      'ontology_get_node',
      'ontology_find_nodes',
      'ontology_neighborhood',
      'ontology_write_node',
      'ontology_link',
      'ontology_forget',
      'ontology_symbol_context',
      'ontology_history',
    ]) {
      expect(offered).to.include(tool);
    }

    await client(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    const run = await succeeded(c, id);
    expect(run.output).to.deep.equal({ answer: 'Added.' });
    expect(run.steps[0].output).to.deep.include({ status: 'applied' });
    expect(run.steps[0].output.node.name).to.equal('Grace Hopper');
  });
});
