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

  it('offers a run the tool list of the versions it started with after a refresh changed a schema', async () => {
    const remote = await startMcpRemote();
    try {
      const tenant = await newTenant(20);
      const api = as(tenant.api_key, openai.stack.baseUrl);
      const created = await api.post('/v1/connectors', { name: 'desk', kind: 'mcp', url: remote.url });
      expect(created.status, created.text).to.equal(201);
      const goal = 'File one desk issue';
      openai.fake.scriptChat((_schema, body) => {
        if (body?.messages?.[1]?.content !== goal) return undefined;
        const answered = body.messages.some((message: any) => message.role === 'tool');
        return answered
          ? { content: 'Filed.' }
          : { toolCalls: [{ name: 'desk_create_issue', arguments: '{"title": "a"}' }] };
      });
      const id = (await api.post('/v1/runs', { agent: 'llm', input: { goal } })).body.execution_id;
      const approval = await pendingApproval(api, id);

      remote.revise('priority');
      const refreshed = await api.post(`/v1/connectors/${created.body.id}/refresh`);
      expect(refreshed.body.version).to.equal(2);
      const reviewer = as((await newMember(tenant.workspace_id)).api_key, openai.stack.baseUrl);
      await reviewer.post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
      await succeeded(api, id);

      // Both model turns (before and after the refresh) were offered version 1's schema.
      const turns = openai.fake.requests.filter((request) => request.body?.messages?.[1]?.content === goal);
      expect(turns.length).to.be.at.least(2);
      for (const turn of turns) {
        const tool = turn.body.tools.find((offered: any) => offered.function.name === 'desk_create_issue');
        expect(tool.function.description).to.equal('Files an issue');
        expect(tool.function.parameters.required).to.deep.equal(['title']);
      }
      expect(remote.writes.map(({ title, priority }) => [title, priority])).to.deep.equal([['a', 'low']]);
    } finally {
      await remote.stop();
    }
  });
});
