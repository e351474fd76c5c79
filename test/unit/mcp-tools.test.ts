import { expect } from 'chai';
import { allCapabilities } from '../../src/app/capabilities';
import { createCapabilityService } from '../../src/capabilities/service';
import { WIRE_NAME_PATTERN } from '../../src/capabilities/wire-names';
import { errorResult, locateInArguments, META, mcpTools } from '../../src/mcp/tools';

// Declaring tools and describing them does no I/O: the dependencies are never called.
const unused = {} as never;
const registry = () => {
  const tools = allCapabilities({
    uow: unused,
    read: unused,
    outbox: unused,
    sessionTtlSeconds: 300,
    prompts: unused,
    promptApi: unused,
    search: unused,
    nodes: unused,
    traversals: unused,
    versions: unused,
    code: unused,
    runs: () => unused,
    approvals: () => unused,
    waitpoints: () => unused,
  });
  const service = createCapabilityService({
    uow: unused,
    read: unused,
    logger: unused,
    credits: unused,
    tools,
    validateOutputs: true,
  });
  return { tools, described: mcpTools(service.tools, service.describe()) };
};

describe('MCP tools from the capability registry', () => {
  it('one tool per capability, under a name every client accepts, with object schemas', () => {
    const { tools, described } = registry();
    expect(described.map((tool) => tool.capability)).to.deep.equal(tools.map((tool) => tool.name));
    for (const { definition } of described) {
      expect(definition.name).to.match(WIRE_NAME_PATTERN);
      expect(definition.inputSchema.type).to.equal('object');
      // OpenAI's and Anthropic's tool calling refuse a union at the top (runs.dispatch's body is one).
      expect(definition.inputSchema).to.not.have.any.keys('anyOf', 'oneOf', 'allOf');
      expect(definition.outputSchema?.type).to.equal('object');
    }
  });

  it('read tools are read-only; a write tool is idempotent only when a repeat changes nothing more', () => {
    const { tools, described } = registry();
    for (const tool of tools) {
      const { definition, scopes } = described.find((candidate) => candidate.capability === tool.name)!;
      const scope = scopes[0];
      if (tool.access === 'read') {
        expect(definition.annotations).to.include({ readOnlyHint: true });
        expect(scope).to.equal('capabilities:read');
      } else {
        expect(definition.annotations).to.include({ readOnlyHint: false, idempotentHint: tool.repeatSafe === true });
        expect(scope).to.equal('capabilities:write');
        expect(definition.description).to.contain(META.idempotencyKey);
      }
    }
    const idempotent = described.filter((tool) => tool.definition.annotations?.idempotentHint === true);
    expect(idempotent.map((tool) => tool.capability).sort()).to.deep.equal([
      'agent.end_session',
      'agent.release_claim',
      'runs.cancel',
    ]);
  });

  it('tells a refusal as an error result with the status and detail, and 422 paths under arguments', () => {
    const detail = { error: 'insufficient_credits', kind: 'ontology.search.hybrid', required: 1, available: 0 };
    const result = errorResult(402, detail);
    expect(result.isError).to.equal(true);
    expect(result).to.not.have.property('structuredContent');
    expect(result._meta).to.deep.equal({ [META.error]: { status: 402, detail } });
    expect(JSON.parse((result.content[0] as { text: string }).text)).to.deep.equal({ status: 402, detail });
    expect(
      locateInArguments([
        { loc: ['body', 'top_k'], msg: 'too big', type: 'too_big' },
        { loc: ['_meta', META.idempotencyKey], msg: 'bad', type: 'idempotency_key_invalid' },
      ]).map((issue) => issue.loc),
    ).to.deep.equal([
      ['arguments', 'top_k'],
      ['_meta', META.idempotencyKey],
    ]);
  });
});
