import type { CallToolResult, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { CallToolResultSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import { answerToolCall, toolResult } from '../../src/mcp/direct-calls';

describe('a plain tools/call answered without the SDK Server', () => {
  const call = (id: string | number, params: Record<string, unknown>): JSONRPCRequest => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params,
  });
  const answer = async (handler: () => Promise<CallToolResult>, params: Record<string, unknown> = { name: 't' }) => {
    const failures: unknown[] = [];
    const body = await answerToolCall(call('a"1', params), handler, {
      checkResult: true,
      failed: (error) => failures.push(error),
    });
    return { message: JSON.parse(body), failures };
  };

  it('answers the result with the structured content and the same JSON as its text block', async () => {
    const structured = { node: { id: 'n', name: 'quote " and \\ backslash' }, edges: [1, 2] };
    const { message } = await answer(async () => toolResult(structured, { 'weft/creditsCharged': 0 }));
    expect(message).to.deep.include({ jsonrpc: '2.0', id: 'a"1' });
    expect(message.result.structuredContent).to.deep.equal(structured);
    expect(JSON.parse(message.result.content[0].text)).to.deep.equal(structured);
    expect(message.result._meta).to.deep.equal({ 'weft/creditsCharged': 0 });
    expect(CallToolResultSchema.safeParse(message.result).success).to.equal(true);
  });

  it('answers an McpError as its JSON-RPC error, anything else as -32603 without its text', async () => {
    const unknown = await answer(async () => {
      throw new McpError(ErrorCode.InvalidParams, 'Unknown tool t');
    });
    expect(unknown.message.error).to.include({
      code: ErrorCode.InvalidParams,
      message: 'MCP error -32602: Unknown tool t',
    });
    const broken = await answer(async () => {
      throw new Error('connection string with a password');
    });
    expect(broken.message.error).to.deep.equal({ code: ErrorCode.InternalError, message: 'Internal server error' });
    expect(broken.failures).to.have.length(1);
  });

  it('refuses params the SDK schema refuses (-32602), without calling the tool', async () => {
    let called = false;
    const { message } = await answer(
      async () => {
        called = true;
        return toolResult({}, {});
      },
      { arguments: { a: 1 } },
    );
    expect(message.error.code).to.equal(ErrorCode.InvalidParams);
    expect(message.error.message).to.match(/^Invalid tools\/call request/);
    expect(called).to.equal(false);
  });

  it('checks the result against the MCP result schema where answers are checked', async () => {
    const { message, failures } = await answer(async () => ({ content: 'not a list' }) as unknown as CallToolResult);
    expect(message.error.code).to.equal(ErrorCode.InternalError);
    expect(String(failures[0])).to.match(/MCP result schema/);
  });
});
