import { expect } from 'chai';
import { WIRE_NAME_PATTERN } from '../src/capabilities/wire-names';
import { NOT_A_STEP } from '../src/runs/answer-capabilities';
import type { FakeToolCall } from './helpers/fake-openai';
import { as } from './helpers/http';
import { useOpenAIStack } from './helpers/openai-stack';
import { finished, runUntil } from './helpers/runs';
import { creditBalance, newTenant } from './helpers/tenants';

/** One model turn: a tool call, a final answer, or an HTTP failure of the provider. */
type Turn = FakeToolCall | { answer: string } | { status: number };

describe('runs: the llm agent on OpenAI tool calling (fake OpenAI-compatible server)', function () {
  this.timeout(60_000);
  const openai = useOpenAIStack();
  const client = (token: string) => as(token, openai.stack.baseUrl);

  /** The chat requests of one run, told apart by its goal (the user message). */
  const requestsOf = (goal: string) =>
    openai.fake.requests.filter(
      (request) => request.path === '/v1/chat/completions' && request.body?.messages?.[1]?.content === goal,
    );

  /**
   * Scripts the model for the run with this goal: its n-th turn (n = the tool results it has been
   * given so far) is `turns[n]`.
   */
  function scriptRun(goal: string, turns: Turn[]) {
    openai.fake.scriptChat((_schema, body) => {
      if (body?.messages?.[1]?.content !== goal) return undefined;
      const turn = turns[body.messages.filter((message: any) => message.role === 'tool').length];
      if (!turn) return { content: 'out of script' };
      if ('status' in turn) return turn;
      if ('answer' in turn) return { content: turn.answer };
      return { toolCalls: [turn] };
    });
  }

  const toolMessage = (request: { body: any }) => request.body.messages.at(-1);

  it('offers the registry under wire names, feeds refused calls back as errors, and answers', async () => {
    const tenant = await newTenant(10);
    const c = client(tenant.api_key);
    const goal = 'Find what we know about Ada Lovelace';
    scriptRun(goal, [
      { name: 'delete_everything', arguments: '{}' },
      { name: 'ontology_search', arguments: '{"query": 5}' },
      { name: 'ontology_search', arguments: '{"query": "Ada Lovelace"}' },
      { answer: 'Nothing is known about Ada Lovelace yet.' },
    ]);
    const dispatched = await c.post('/v1/runs', { agent: 'llm', input: { goal } });
    expect(dispatched.status, dispatched.text).to.equal(202);
    const run = await finished(c, dispatched.body.execution_id);

    expect(run.status).to.equal('SUCCEEDED');
    expect(run.output).to.deep.equal({ answer: 'Nothing is known about Ada Lovelace yet.' });
    expect(run.steps.map((step: any) => [step.tool, step.status, step.error?.code ?? null])).to.deep.equal([
      ['delete_everything', 'FAILED', 'invalid_tool_call'],
      ['ontology.search', 'FAILED', 'invalid_tool_call'],
      ['ontology.search', 'SUCCEEDED', null],
    ]);
    expect(run.steps[2].output).to.deep.equal({ results: [] });
    // Only the valid call ran, so only it was charged.
    expect(run.credits_charged).to.equal(1);
    expect(await creditBalance(tenant.tenant_id)).to.equal(9);

    const requests = requestsOf(goal);
    expect(requests).to.have.length(4);
    const catalogue = (await c.get('/v1/cap')).body;
    const described = new Map<string, any>(catalogue.tools.map((tool: any) => [tool.name, tool]));
    const offered = requests[0]!.body.tools as any[];
    // Every tool of the registry but those no step may call (an approval's resolve: agents never approve).
    expect(offered.map((tool) => tool.function.name).sort()).to.deep.equal(
      [...described.keys()]
        .filter((name) => !NOT_A_STEP.has(name))
        .map((name) => name.replace('.', '_'))
        .sort(),
    );
    expect(offered.map((tool) => tool.function.name)).to.not.include('approvals_resolve');
    for (const tool of offered) expect(tool.function.name).to.match(WIRE_NAME_PATTERN);
    const search = offered.find((tool) => tool.function.name === 'ontology_search').function;
    const { $schema: _dialect, ...schema } = described.get('ontology.search').input_schema;
    expect(search.parameters).to.deep.equal(schema);
    expect(search.description).to.equal(described.get('ontology.search').description);
    expect(requests[0]!.body.parallel_tool_calls).to.equal(false);

    // Each call comes back as the assistant's tool call and the tool's answer, ids matching.
    const [, second, third, fourth] = requests;
    const assistant = second!.body.messages.at(-2);
    expect(assistant.tool_calls[0].function).to.deep.equal({ name: 'delete_everything', arguments: '{}' });
    expect(toolMessage(second!).tool_call_id).to.equal(assistant.tool_calls[0].id);
    expect(JSON.parse(toolMessage(second!).content)).to.deep.equal({
      error: 'invalid_tool_call',
      message: 'Unknown tool delete_everything',
    });
    expect(JSON.parse(toolMessage(third!).content).message).to.match(/^Input refused by ontology\.search/);
    expect(third!.body.messages.at(-2).tool_calls[0].function).to.deep.equal({
      name: 'ontology_search',
      arguments: '{"query":5}',
    });
    expect(JSON.parse(toolMessage(fourth!).content)).to.deep.equal({ results: [] });
    expect(fourth!.body.messages.filter((message: any) => message.role === 'tool')).to.have.length(3);
  });

  it('a write tool call waits for approval under approval: writes, then runs and the model answers', async () => {
    const tenant = await newTenant(5);
    const c = client(tenant.api_key);
    const goal = 'Open a work session for the billing refactor';
    scriptRun(goal, [
      { name: 'billing_credits_balance', arguments: '{}' },
      { name: 'agent_start_session', arguments: '{"name": "billing refactor"}' },
      { answer: 'Session opened.' },
    ]);
    const dispatched = await c.post('/v1/runs', { agent: 'llm', input: { goal, approval: 'writes' } });
    const id = dispatched.body.execution_id;
    const waiting = await runUntil(c, id, (run) => run.status === 'AWAITING_APPROVAL', 'the approval');
    // The read ran without asking; the write waits, not yet run.
    expect(waiting.steps.map((step: any) => [step.tool, step.status, step.requires_approval])).to.deep.equal([
      ['billing.credits_balance', 'SUCCEEDED', false],
      ['agent.start_session', 'PENDING', true],
    ]);
    expect(waiting.approvals).to.have.length(1);
    expect(waiting.approvals[0].step).to.deep.include({
      tool: 'agent.start_session',
      input: { name: 'billing refactor' },
    });
    expect(requestsOf(goal)).to.have.length(2);

    const resolved = await client(tenant.user_jwt).post(`/v1/approvals/${waiting.approvals[0].approval_id}/resolve`, {
      decision: 'APPROVED',
    });
    expect(resolved.status).to.equal(200);
    const run = await finished(c, id);
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.output).to.deep.equal({ answer: 'Session opened.' });
    expect(run.steps[1].status).to.equal('SUCCEEDED');
    const last = requestsOf(goal).at(-1)!;
    expect(JSON.parse(toolMessage(last).content)).to.have.property('session_id');
  });

  it('offers only the tools the run’s credential may call; calling another is an unknown tool', async () => {
    const tenant = await newTenant(5);
    const scopes = ['runs:write', 'runs:read', 'capabilities:read'];
    const key = (await client(tenant.user_jwt).post('/v1/auth/me/api-keys', { name: 'reader', scopes })).body.token;
    const c = client(key);
    const goal = 'Start a session, if you may';
    scriptRun(goal, [{ name: 'agent_start_session', arguments: '{"name": "x"}' }, { answer: 'I may not.' }]);
    const dispatched = await c.post('/v1/runs', { agent: 'llm', input: { goal, approval: 'none' } });
    const run = await finished(c, dispatched.body.execution_id);
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.steps.map((step: any) => [step.tool, step.status, step.error?.message])).to.deep.equal([
      ['agent_start_session', 'FAILED', 'Unknown tool agent_start_session'],
    ]);
    const offered = requestsOf(goal)[0]!.body.tools.map((tool: any) => tool.function.name);
    expect(offered).to.include('ontology_search');
    expect(offered).to.not.include('agent_start_session');
  });

  it('a model call that keeps failing ends the run FAILED with a structured error, not a hang', async () => {
    const tenant = await newTenant(5);
    const c = client(tenant.api_key);
    const goal = 'What does the provider say?';
    scriptRun(goal, [{ status: 500 }]);
    const dispatched = await c.post('/v1/runs', { agent: 'llm', input: { goal } });
    const run = await finished(c, dispatched.body.execution_id);
    expect(run.status).to.equal('FAILED');
    expect(run.error).to.deep.equal({
      code: 'upstream_unavailable',
      message: 'The model call failed (http_error)',
      step: null,
    });
    expect(run.steps).to.have.length(0);
    expect(run.credits_charged).to.equal(0);
  });
});
