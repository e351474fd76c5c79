import { expect } from 'chai';
import { operationsOf } from '../../src/connectors/openapi';
import { ConnectorCallError, mayRetry } from '../../src/connectors/outbound';
import { normaliseToolName, registerTools } from '../../src/connectors/tool-names';
import { addressPolicy, addressRefusal, METADATA_ADDRESSES } from '../../src/run-callbacks/address-guard';

const remote = (remoteName: string) => ({
  remoteName,
  description: remoteName,
  inputSchema: { type: 'object' },
  readOnly: false,
});

describe('connectors: naming remote tools (issue 41)', () => {
  it('normalises names to [a-z0-9_]', () => {
    expect(normaliseToolName('createIssue')).to.equal('create_issue');
    expect(normaliseToolName('create-issue')).to.equal('create_issue');
    expect(normaliseToolName('Create Issue!')).to.equal('create_issue');
    expect(normaliseToolName('__x__')).to.equal('x');
    expect(normaliseToolName('???')).to.equal('');
  });

  it('refuses collisions, names that vanish, wire names past 64 characters and built-in wire names', () => {
    expect(registerTools('gh', [remote('createIssue'), remote('create_issue')], new Set())).to.deep.equal({
      problems: ["tools 'createIssue' and 'create_issue' are both 'create_issue'"],
    });
    expect(registerTools('gh', [remote('???')], new Set())).to.have.property('problems');
    expect(registerTools('gh', [remote('x'.repeat(62))], new Set())).to.have.property('problems');
    expect(registerTools('agent_claim', [remote('work')], new Set(['agent_claim_work']))).to.deep.equal({
      problems: ["tool 'work': 'agent_claim_work' is a built-in tool"],
    });
    const ok = registerTools('gh', [remote('createIssue')], new Set());
    expect(ok).to.deep.equal({
      tools: [
        {
          name: 'create_issue',
          remote_name: 'createIssue',
          description: 'createIssue',
          input_schema: { type: 'object' },
          read_only: false,
        },
      ],
    });
  });
});

describe('connectors: OpenAPI operations as tools (issue 41)', () => {
  const doc = (paths: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    openapi: '3.1.0',
    info: { title: 't', version: '1' },
    paths,
    ...extra,
  });

  it('joins parameters and the JSON body, resolves local $refs, and marks GET and HEAD read-only', () => {
    const found = operationsOf(
      doc(
        {
          '/things/{id}': {
            parameters: [{ $ref: '#/components/parameters/Id' }],
            get: { operationId: 'getThing', parameters: [{ name: 'q', in: 'query', schema: { type: 'integer' } }] },
            put: {
              operationId: 'putThing',
              requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } },
            },
            delete: { summary: 'no operationId: not a tool' },
          },
        },
        {
          components: {
            parameters: { Id: { name: 'id', in: 'path', schema: { type: 'string' } } },
            schemas: { Thing: { type: 'object', properties: { name: { type: 'string' } } } },
          },
        },
      ),
    );
    expect(found).to.have.property('tools');
    const tools = (found as { tools: any[] }).tools;
    expect(tools.map((tool) => [tool.remoteName, tool.readOnly])).to.deep.equal([
      ['getThing', true],
      ['putThing', false],
    ]);
    expect(tools[0].inputSchema).to.deep.equal({
      type: 'object',
      properties: { id: { type: 'string' }, q: { type: 'integer' } },
      required: ['id'],
    });
    expect(tools[1].inputSchema.properties.body).to.deep.equal({
      type: 'object',
      properties: { name: { type: 'string' } },
    });
    expect(tools[1].http).to.deep.equal({
      method: 'PUT',
      path: '/things/{id}',
      params: [{ name: 'id', in: 'path' }],
      body: true,
    });
  });

  it('refuses what is not OpenAPI 3.x, a document without operations, and references it cannot resolve', () => {
    expect(operationsOf({ swagger: '2.0', paths: {} })).to.have.property('problems');
    expect(operationsOf(doc({ '/a': { get: { summary: 'x' } } }))).to.deep.equal({
      problems: ['no operation has an operationId'],
    });
    const remoteRef = operationsOf(
      doc({ '/a': { get: { operationId: 'a', parameters: [{ $ref: 'https://evil.example/p.json' }] } } }),
    );
    expect((remoteRef as { problems: string[] }).problems[0]).to.include('not a reference inside the document');
    const cycle = operationsOf(
      doc(
        {
          '/a': {
            post: {
              operationId: 'a',
              requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/A' } } } },
            },
          },
        },
        { components: { schemas: { A: { $ref: '#/components/schemas/A' } } } },
      ),
    );
    expect(cycle).to.have.property('problems');
  });
});

describe('connectors: the address rules (issue 41)', () => {
  it('never allows the metadata address, whatever the allowance; allows only the ranges given', () => {
    const policy = addressPolicy(false, '127.0.0.1/32,169.254.0.0/16', { never: METADATA_ADDRESSES });
    expect(addressRefusal('127.0.0.1', policy)).to.equal(null);
    expect(addressRefusal('127.0.0.2', policy)).to.be.a('string');
    expect(addressRefusal('169.254.169.254', policy)).to.include('metadata');
    expect(addressRefusal('::ffff:169.254.169.254', policy)).to.include('metadata');
    expect(addressRefusal('169.254.1.1', policy)).to.equal(null);
    expect(addressRefusal('169.254.169.254', addressPolicy(true, '', { never: METADATA_ADDRESSES }))).to.be.a('string');
    expect(addressRefusal('8.8.8.8', policy)).to.equal(null);
    expect(() => addressPolicy(false, 'nonsense', { variable: 'CONNECTOR_ALLOWED_CIDRS' })).to.throw(
      /CONNECTOR_ALLOWED_CIDRS/,
    );
  });
});

describe('connectors: which failed calls are made again (issue 41)', () => {
  it('a read-only tool after a broken connection or a timeout; any tool when nothing was sent', () => {
    const broken = new ConnectorCallError('unreachable', 'reset');
    const refusedConnection = new ConnectorCallError('unreachable', 'refused', undefined, true);
    expect(mayRetry(broken, true)).to.equal(true);
    expect(mayRetry(broken, false)).to.equal(false);
    expect(mayRetry(refusedConnection, false)).to.equal(true);
    expect(mayRetry(new ConnectorCallError('timeout', 'late'), true), 'a read that timed out').to.equal(true);
    expect(mayRetry(new ConnectorCallError('timeout', 'late'), false), 'a write that timed out').to.equal(false);
    for (const reason of ['remote_error', 'response_too_large', 'address_refused'] as const) {
      expect(mayRetry(new ConnectorCallError(reason, 'x', undefined, true), true), reason).to.equal(false);
    }
    expect(mayRetry(new Error('other'), true)).to.equal(false);
  });
});
