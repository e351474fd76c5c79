import { expect } from 'chai';
import type OpenAI from 'openai';
import { UpstreamError } from '../../src/platform/llm/errors';
import type { AgentTool } from '../../src/runs/agent-model';
import { agentMessages, agentTools, createOpenAIAgentModel } from '../../src/runs/agent-model';

const TOOLS: AgentTool[] = [
  {
    name: 'ontology.search',
    description: 'Hybrid search',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { query: { type: 'string' } },
      required: ['query'],
    },
  },
  { name: 'billing.credits_balance', description: 'The balance', inputSchema: { type: 'object' } },
];

/** A client whose one chat completion answers `message`, recording the request. */
function clientAnswering(message: Record<string, unknown>) {
  const sent: any[] = [];
  const client = {
    chat: {
      completions: {
        create: async (body: unknown) => {
          sent.push(body);
          return { choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', ...message } }] };
        },
      },
    },
  } as unknown as OpenAI;
  return { client, sent };
}

const toolCall = (name: string, args: string) => ({
  content: null,
  tool_calls: [{ id: 'call_1', type: 'function', function: { name, arguments: args } }],
});

const next = (message: Record<string, unknown>) =>
  createOpenAIAgentModel(clientAnswering(message).client, 'gpt-test').next({ goal: 'g', tools: TOOLS, history: [] });

describe('the llm agent on OpenAI tool calling', () => {
  it('offers the tools under wire names with their schemas, without the $schema keyword', () => {
    expect(agentTools(TOOLS)).to.deep.equal([
      {
        type: 'function',
        function: {
          name: 'ontology_search',
          description: 'Hybrid search',
          parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
        },
      },
      {
        type: 'function',
        function: { name: 'billing_credits_balance', description: 'The balance', parameters: { type: 'object' } },
      },
    ]);
  });

  it('maps a tool call back to its capability; an unknown name passes as sent', async () => {
    expect(await next(toolCall('ontology_search', '{"query":"ada"}'))).to.deep.equal({
      kind: 'tool',
      tool: 'ontology.search',
      input: { query: 'ada' },
    });
    expect(await next(toolCall('rm_rf', '{}'))).to.deep.equal({ kind: 'tool', tool: 'rm_rf', input: {} });
  });

  it('refuses arguments that are not a JSON object, and answers with plain content', async () => {
    for (const args of ['not json', '[1,2]', '"text"']) {
      expect(await next(toolCall('ontology_search', args))).to.deep.equal({
        kind: 'tool',
        tool: 'ontology.search',
        input: {},
        refusal: 'The arguments are not a JSON object',
      });
    }
    expect(await next({ content: 'Done.' })).to.deep.equal({ kind: 'final', answer: 'Done.' });
  });

  it('an answer with neither a tool call nor content is an upstream error', async () => {
    const error = await next({ content: null }).catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(UpstreamError);
    expect((error as UpstreamError).reason).to.equal('invalid_response');
  });

  it('replays each step as the assistant’s call and the tool’s answer, ids matching', () => {
    const messages = agentMessages('goal', [
      {
        stepNo: 0,
        tool: 'nope',
        input: {},
        status: 'FAILED',
        output: null,
        error: { code: 'invalid_tool_call', message: 'Unknown tool nope' },
      },
      {
        stepNo: 1,
        tool: 'billing.credits_balance',
        input: {},
        status: 'SUCCEEDED',
        output: { balance: 3 },
        error: null,
      },
    ]);
    expect(messages.map((message) => message.role)).to.deep.equal([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
    ]);
    expect(messages[4]).to.deep.include({
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'billing_credits_balance', arguments: '{}' } }],
    });
    expect(messages[3]).to.deep.equal({
      role: 'tool',
      tool_call_id: 'call_0',
      content: '{"error":"invalid_tool_call","message":"Unknown tool nope"}',
    });
    expect(messages[5]).to.deep.equal({ role: 'tool', tool_call_id: 'call_1', content: '{"balance":3}' });
  });
});
