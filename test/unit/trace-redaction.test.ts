import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { expect } from 'chai';
import { GENAI_CONTENT_VARIABLE, genAiContentCaptured } from '../../src/platform/telemetry/genai';
import { redactAttributes, tracedStatement, workflowSpanProcessor } from '../../src/platform/telemetry/redaction';

// Review NL-4: the span attributes that used to carry credentials and what users typed.
describe('trace redaction (unit)', () => {
  const hash = 'a'.repeat(64);
  const workspace = '4f0c2a57-8d0b-4c1e-9a55-0c1f9ad9e0b1';
  const user = '0d4e9f8a-1b2c-4d3e-8f7a-6b5c4d3e2f1a';

  it('shows a unit of work’s BEGIN message with its literals as ?, setting names kept', () => {
    const begin =
      `BEGIN; SELECT * FROM weft_authenticate_key('${hash}'); ` +
      `SELECT set_config('app.workspace_id', '${workspace}', true), ` +
      `set_config('app.user_id', '${user}', true), set_config('app.key_hash', '${hash}', true), ` +
      `set_config('app.actor_kind', 'api_key', true)`;
    const traced = tracedStatement(begin);
    expect(traced).to.equal(
      "BEGIN; SELECT * FROM weft_authenticate_key(?); SELECT set_config('app.workspace_id', ?, true), " +
        "set_config('app.user_id', ?, true), set_config('app.key_hash', ?, true), " +
        "set_config('app.actor_kind', ?, true)",
    );
    for (const secret of [hash, workspace, user]) expect(traced).to.not.contain(secret);
    expect(
      tracedStatement(`BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT weft_authenticate_user('${user}', NULL)`),
    ).to.equal('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT weft_authenticate_user(?, NULL)');
    // Every other statement binds its values: its text is shown as written.
    const bound = `SELECT id FROM nodes WHERE workspace_id = $1 AND type = 'person'`;
    expect(tracedStatement(bound)).to.equal(bound);
  });

  it('drops a request’s query string and an outgoing request’s path, under old and stable names', () => {
    const server: Record<string, unknown> = {
      'http.target': '/v1/ontology/typeahead?q=Ada%20Lovelace',
      'http.url': 'http://x:1/v1/ontology/typeahead?q=Ada%20Lovelace',
      'url.path': '/v1/ontology/typeahead',
      'url.query': 'q=Ada%20Lovelace',
      'http.route': '/v1/ontology/typeahead',
    };
    redactAttributes(server, false);
    expect(server).to.deep.equal({
      'http.target': '/v1/ontology/typeahead',
      'http.url': 'http://x:1/v1/ontology/typeahead',
      'url.path': '/v1/ontology/typeahead',
      'http.route': '/v1/ontology/typeahead',
    });
    const client: Record<string, unknown> = {
      'http.url': 'https://hooks.example.com:8443/services/T0/B0/secret?x=1',
      'http.target': '/services/T0/B0/secret?x=1',
      'url.full': 'https://hooks.example.com:8443/services/T0/B0/secret?x=1',
      'net.peer.name': 'hooks.example.com',
    };
    redactAttributes(client, true);
    expect(client).to.deep.equal({
      'http.url': 'https://hooks.example.com:8443',
      'http.target': '',
      'url.full': 'https://hooks.example.com:8443',
      'net.peer.name': 'hooks.example.com',
    });
    const statement: Record<string, unknown> = {
      'db.statement': `BEGIN; SELECT set_config('app.user_id', '${user}', true)`,
    };
    redactAttributes(statement, true);
    expect(statement['db.statement']).to.equal("BEGIN; SELECT set_config('app.user_id', ?, true)");
  });

  it('exports a workflow’s own span with its ids and type, not the rest of its WorkflowInfo', async () => {
    const seen: ReadableSpan[] = [];
    const next = { onEnd: (span: ReadableSpan) => seen.push(span) } as unknown as SpanProcessor;
    const attributes = {
      temporalUpdateId: 'u-1',
      workflowId: `run-${user}`,
      runId: user,
      workflowType: 'runWorkflow',
      taskQueue: 'weft',
      namespace: 'default',
      attempt: 1,
      searchAttributes: { WeftWorkspaceId: [workspace] },
      memo: { note: 'x' },
      firstExecutionRunId: user,
    };
    workflowSpanProcessor(next).onEnd({ attributes } as unknown as ReadableSpan);
    expect(seen[0]!.attributes).to.deep.equal({
      temporalUpdateId: 'u-1',
      workflowId: `run-${user}`,
      runId: user,
      workflowType: 'runWorkflow',
      taskQueue: 'weft',
      namespace: 'default',
      attempt: 1,
    });
  });

  it('drops GenAI content (prompts, answers, tool input and output) unless the operator opted in', () => {
    const spanOf = () => ({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.usage.input_tokens': 12,
      'gen_ai.input.messages': '[{"role":"user","parts":[{"type":"text","content":"private"}]}]',
      'gen_ai.output.messages': '[]',
      'gen_ai.system_instructions': 'You are',
      'gen_ai.tool.call.arguments': '{"query":"Ada"}',
      'gen_ai.tool.call.result': '{"results":[]}',
    });
    const before = process.env[GENAI_CONTENT_VARIABLE];
    try {
      delete process.env[GENAI_CONTENT_VARIABLE];
      const off: Record<string, unknown> = spanOf();
      redactAttributes(off, false);
      expect(off).to.deep.equal({
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.usage.input_tokens': 12,
      });
      process.env[GENAI_CONTENT_VARIABLE] = 'true';
      const on: Record<string, unknown> = spanOf();
      redactAttributes(on, false);
      expect(on).to.deep.equal(spanOf());
    } finally {
      if (before === undefined) delete process.env[GENAI_CONTENT_VARIABLE];
      else process.env[GENAI_CONTENT_VARIABLE] = before;
    }
    expect(genAiContentCaptured({ [GENAI_CONTENT_VARIABLE]: '1' })).to.equal(true);
    expect(genAiContentCaptured({ [GENAI_CONTENT_VARIABLE]: 'yes' })).to.equal(false);
    expect(genAiContentCaptured({})).to.equal(false);
  });
});
