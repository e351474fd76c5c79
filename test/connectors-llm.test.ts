import { expect } from 'chai';
import { as } from './helpers/http';
import { useOpenAIStack } from './helpers/openai-stack';
import { startMcpRemote } from './helpers/remote-tools';
import { pendingApproval, succeeded } from './helpers/runs';
import { newMember, newTenant } from './helpers/tenants';

// Issue 41: an llm run (OpenAI tool calling against a fake server) calls a connector's tools: the
// read tool at once, the write tool after a person approved it, exactly once with the step's key.

describe('connectors in an llm run (issue 41)', function () {
  this.timeout(90_000);
  const openai = useOpenAIStack({ CONNECTOR_ALLOWED_CIDRS: '127.0.0.1/32' });
  let mcp: Awaited<ReturnType<typeof startMcpRemote>>;
  before(async () => {
    mcp = await startMcpRemote();
  });
  after(async () => mcp?.stop());

  it('offers the tools under wire names, runs the read, and asks before the write', async () => {
    const tenant = await newTenant(20);
    const api = as(tenant.api_key, openai.stack.baseUrl);
    const created = await api.post('/v1/connectors', { name: 'tracker', kind: 'mcp', url: mcp.url });
    expect(created.status, created.text).to.equal(201);

    const goal = 'File a follow-up to issue 4';
    const turns = [
      { name: 'tracker_lookup_issue', arguments: '{"id": 4}' },
      { name: 'tracker_create_issue', arguments: '{"title": "Follow-up to Issue 4"}' },
    ];
    openai.fake.scriptChat((_schema, body) => {
      if (body?.messages?.[1]?.content !== goal) return undefined;
      const turn = turns[body.messages.filter((message: any) => message.role === 'tool').length];
      return turn ? { toolCalls: [turn] } : { content: 'Filed.' };
    });

    const dispatched = await api.post('/v1/runs', { agent: 'llm', input: { goal } });
    expect(dispatched.status, dispatched.text).to.equal(202);
    const id = dispatched.body.execution_id;
    const approval = await pendingApproval(api, id);
    expect(mcp.writes).to.deep.equal([]);
    const offered = openai.fake.requests.find((request) => request.body?.messages?.[1]?.content === goal)!.body.tools;
    expect(offered.map((tool: any) => tool.function.name)).to.include.members([
      'tracker_lookup_issue',
      'tracker_create_issue',
    ]);

    const reviewer = as((await newMember(tenant.workspace_id)).api_key, openai.stack.baseUrl);
    const resolved = await reviewer.post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    expect(resolved.status, resolved.text).to.equal(200);
    const run = await succeeded(api, id);
    expect(run.steps.map((step: any) => [step.tool, step.status])).to.deep.equal([
      ['tracker.lookup_issue', 'SUCCEEDED'],
      ['tracker.create_issue', 'SUCCEEDED'],
    ]);
    expect(run.steps[0].output).to.deep.equal({ id: 4, title: 'Issue 4' });
    expect(mcp.writes).to.deep.equal([{ title: 'Follow-up to Issue 4', key: `${id}:1` }]);
  });
});
