import { expect } from 'chai';
import { agentSpanId, GENAI_CONTENT_ATTRIBUTES, GENAI_CONTENT_VARIABLE } from '../src/platform/telemetry/genai';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { succeeded } from './helpers/runs';
import { newTenant } from './helpers/tenants';
import type { ReceivedSpan } from './helpers/traces';
import { attributeText, tracedProcesses } from './helpers/traces';

const MODEL = 'gpt-4o-mini'; // OPENAI_CHAT_MODEL's default

/**
 * Issue 42 item 4: an llm run with one tool step, traced. The model (the fake OpenAI) first calls
 * `ontology_search`, then answers; the spans the run leaves, once its `invoke_agent` span arrived.
 */
async function tracedLlmRun(traced: ReturnType<typeof tracedProcesses>, goal: string, answer: string) {
  traced.fake.scriptChat((_schema, body) => {
    if (body?.messages?.[1]?.content !== goal) return undefined;
    const told = body.messages.filter((message: { role: string }) => message.role === 'tool').length;
    return told === 0
      ? { toolCalls: [{ name: 'ontology_search', arguments: '{"query": "Ada"}' }] }
      : { content: answer };
  });
  const tenant = await newTenant(20);
  const client = as(tenant.api_key, traced.api.baseUrl);
  const dispatched = await client.post('/v1/runs', { agent: 'llm', input: { goal, approval: 'none' } });
  expect(dispatched.status, JSON.stringify(dispatched.body)).to.equal(202);
  const executionId: string = dispatched.body.execution_id;
  await succeeded(client, executionId);
  const agentId = agentSpanId(executionId);
  const agent = await eventually(() => traced.receiver.spans.find((span) => span.spanId === agentId), {
    what: 'the run’s invoke_agent span',
    timeoutMs: 30_000,
    intervalMs: 250,
  });
  const children = (name: string) =>
    traced.receiver.spans.filter((span) => span.parentSpanId === agentId && span.name === name);
  // Its children were exported before it (each ended first); wait for both model calls all the same.
  const chats = await eventually(() => children(`chat ${MODEL}`).length === 2 && children(`chat ${MODEL}`), {
    what: 'the run’s two chat spans',
    timeoutMs: 30_000,
    intervalMs: 250,
  });
  // In the order they were made.
  chats.sort((one, other) => Number(BigInt(one.startTimeUnixNano ?? 0) - BigInt(other.startTimeUnixNano ?? 0)));
  return { agent, chats, tools: children('execute_tool ontology.search') };
}

const keysOf = (spans: ReceivedSpan[]) => new Set(spans.flatMap((span) => (span.attributes ?? []).map((a) => a.key)));
const allText = (spans: ReceivedSpan[]) => JSON.stringify(spans.map((span) => span.attributes ?? []));

describe('GenAI spans: a run, its tool step and its model calls (real processes, OTLP/HTTP)', function () {
  this.timeout(180_000);
  const traced = tracedProcesses();

  it('invoke_agent llm → chat <model> ×2 and execute_tool ontology.search, with names, model and tokens', async () => {
    const goal = 'What do we know about Ada? (a private goal)';
    const { agent, chats, tools } = await tracedLlmRun(traced, goal, 'Nothing yet, privately.');

    expect(agent.name).to.equal('invoke_agent llm');
    expect(attributeText(agent, 'gen_ai.operation.name')).to.equal('invoke_agent');
    expect(attributeText(agent, 'gen_ai.agent.name')).to.equal('llm');
    expect(attributeText(agent, 'gen_ai.request.model')).to.equal(MODEL);
    expect(attributeText(agent, 'weft.run.status')).to.equal('SUCCEEDED');
    // In the trace its activities run in: the steps' spans name it as their parent.
    expect(tools).to.have.length(1);
    const [tool] = tools;
    expect(tool!.traceId).to.equal(agent.traceId);
    expect(attributeText(tool!, 'gen_ai.operation.name')).to.equal('execute_tool');
    expect(attributeText(tool!, 'gen_ai.tool.name')).to.equal('ontology.search');
    for (const chat of chats) {
      expect(attributeText(chat, 'gen_ai.operation.name')).to.equal('chat');
      expect(attributeText(chat, 'gen_ai.provider.name')).to.equal('openai');
      expect(attributeText(chat, 'gen_ai.request.model')).to.equal(MODEL);
      // The fake answers usage {prompt_tokens: 1, completion_tokens: 1}.
      expect(attributeText(chat, 'gen_ai.usage.input_tokens')).to.equal('1');
      expect(attributeText(chat, 'gen_ai.usage.output_tokens')).to.equal('1');
    }
    // The step's own SQL runs inside its span.
    const sql = traced.receiver.spans.filter((span) => span.parentSpanId === tool!.spanId);
    expect(sql.length, 'spans under execute_tool').to.be.greaterThan(0);

    // No content unless the operator opts in: no content attribute, and neither the goal nor the answer.
    const run = [agent, ...chats, tool!];
    for (const key of GENAI_CONTENT_ATTRIBUTES) expect([...keysOf(run)], key).to.not.include(key);
    expect(allText(traced.receiver.spans)).to.not.contain('a private goal').and.not.contain('privately');
  });

  it('a playbook run: invoke_agent playbook over its execute_tool steps, no model, and one span per run', async () => {
    const tenant = await newTenant(20);
    const client = as(tenant.api_key, traced.api.baseUrl);
    const steps = [{ tool: 'billing.credits_balance' }, { tool: 'ontology.search', input: { query: 'x' } }];
    const dispatched = await client.post('/v1/runs', { agent: 'playbook', input: { steps } });
    expect(dispatched.status, JSON.stringify(dispatched.body)).to.equal(202);
    await succeeded(client, dispatched.body.execution_id);
    const agentId = agentSpanId(dispatched.body.execution_id);
    const agent = await eventually(() => traced.receiver.spans.find((span) => span.spanId === agentId), {
      what: 'the playbook run’s invoke_agent span',
      timeoutMs: 30_000,
      intervalMs: 250,
    });
    expect(agent.name).to.equal('invoke_agent playbook');
    expect(attributeText(agent, 'gen_ai.agent.name')).to.equal('playbook');
    expect(attributeText(agent, 'gen_ai.request.model')).to.equal(undefined);
    const children = traced.receiver.spans.filter((span) => span.parentSpanId === agentId).map((span) => span.name);
    expect(children.sort()).to.deep.equal(['execute_tool billing.credits_balance', 'execute_tool ontology.search']);
    // Written once, by the write that ended the run.
    expect(traced.receiver.spans.filter((span) => span.spanId === agentId)).to.have.length(1);
  });
});

describe(`GenAI spans with ${GENAI_CONTENT_VARIABLE}=true: the operator opted in to content`, function () {
  this.timeout(180_000);
  const traced = tracedProcesses({ [GENAI_CONTENT_VARIABLE]: 'true' });

  it('the goal and answer, the model’s messages and the tool’s arguments and result are on the spans', async () => {
    const goal = 'What do we know about Ada? (shared on purpose)';
    const { agent, chats, tools } = await tracedLlmRun(traced, goal, 'Nothing yet, openly.');
    expect(attributeText(agent, 'gen_ai.input.messages')).to.contain(goal);
    expect(attributeText(agent, 'gen_ai.output.messages')).to.contain('Nothing yet, openly.');
    expect(attributeText(chats[0]!, 'gen_ai.input.messages')).to.contain(goal);
    expect(attributeText(chats[0]!, 'gen_ai.output.messages')).to.contain('ontology_search');
    expect(attributeText(chats[1]!, 'gen_ai.output.messages')).to.contain('Nothing yet, openly.');
    expect(tools).to.have.length(1);
    expect(JSON.parse(attributeText(tools[0]!, 'gen_ai.tool.call.arguments')!)).to.deep.equal({ query: 'Ada' });
    expect(JSON.parse(attributeText(tools[0]!, 'gen_ai.tool.call.result')!)).to.have.property('results');
  });
});
