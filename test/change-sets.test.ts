import { expect } from 'chai';
import { capClient } from './helpers/cap';
import { createNode } from './helpers/graph';
import { as } from './helpers/http';
import { creditBalance, newMember, newTenant } from './helpers/tenants';

const NODES = '/v1/ontology/nodes';
const FACTS = 'Ada Lovelace works at Analytical Engines Ltd. Charles Babbage mentored Ada Lovelace.';

type Tenant = Awaited<ReturnType<typeof newTenant>>;

const nodeNames = async (token: string) =>
  ((await as(token).get(`${NODES}?limit=100`)).body as { name: string }[]).map((node) => node.name).sort();
const changeSet = async (token: string, id: string) => {
  const response = await as(token).get(`/v1/ontology/change-sets/${id}`);
  expect(response.status, response.text).to.equal(200);
  return response.body;
};
const resolve = (token: string, approvalId: string, decision: 'APPROVED' | 'REJECTED', notes?: string) =>
  as(token).post(`/v1/approvals/${approvalId}/resolve`, { decision, ...(notes ? { notes } : {}) });

describe('staged change-sets (issue 31 part 4)', function () {
  this.timeout(60_000);

  it('a staged update prompt writes nothing, waits as an approval, and applies on a human’s approval', async () => {
    const t = await newTenant(20);
    const prompted = await as(t.api_key).post('/v1/ontology/prompt', { prompt: FACTS, stage: true });
    expect(prompted.status, prompted.text).to.equal(200);
    expect(prompted.body).to.include({ intent: 'update', nodes_created: 0, edges_created: 0 });
    expect(prompted.body.nodes).to.deep.equal([]);
    const id = prompted.body.change_set_id;
    expect(id).to.be.a('string');
    // The extraction is charged when the change-set is made.
    expect(await creditBalance(t.tenant_id)).to.equal(15);
    expect(await nodeNames(t.api_key)).to.deep.equal([]);

    const staged = await changeSet(t.api_key, id);
    expect(staged).to.include({ status: 'pending', staged_by: t.user_id, resolved_by: null });
    expect(staged.source).to.deep.equal({
      kind: 'prompt',
      prompt_id: prompted.body.correlation_id,
      capability: null,
      call: null,
    });
    expect(staged.staged_by_credential.kind).to.equal('api_key');
    expect(staged.preview.nodes.map((n: any) => [n.name, n.action]).sort()).to.deep.equal([
      ['Ada Lovelace', 'create'],
      ['Analytical Engines Ltd', 'create'],
      ['Charles Babbage', 'create'],
    ]);
    expect(staged.preview.edges.map((e: any) => [e.source, e.type, e.target, e.action]).sort()).to.deep.equal([
      ['Ada Lovelace', 'WORKS_AT', 'Analytical Engines Ltd', 'create'],
      ['Charles Babbage', 'MENTORED', 'Ada Lovelace', 'create'],
    ]);
    expect(staged.preview.edges[0].evidence).to.be.a('string').and.not.empty;
    expect(staged.preview.conflicts).to.deep.equal([]);

    const listed = await as(t.api_key).get('/v1/approvals?status=pending');
    const approval = listed.body.approvals.find((a: any) => a.change_set_id === id);
    expect(approval).to.include({
      approval_id: staged.approval_id,
      subject: 'change_set',
      execution_id: null,
      step: null,
      status: 'pending',
    });
    expect((await as(t.api_key).get(`/v1/ontology/change-sets?status=pending`)).body.change_sets).to.have.length(1);

    // The staging credential never resolves its own change-set.
    const own = await resolve(t.api_key, staged.approval_id, 'APPROVED');
    expect(own.status).to.equal(403);
    expect(own.body.detail.error).to.equal('approval_by_dispatcher');
    expect(own.body.detail.message).to.contain('staged this change-set');

    // The lone member approves through their JWT: applied, all of it.
    const approved = await resolve(t.user_jwt, staged.approval_id, 'APPROVED', 'Checked the source.');
    expect(approved.status, approved.text).to.equal(200);
    expect(approved.body).to.include({ execution_id: null, status: 'approved', decision: 'APPROVED' });
    expect(approved.body.change_set).to.include({ change_set_id: id, status: 'applied' });
    expect(approved.body.change_set.applied.node_ids).to.have.length(3);
    expect(approved.body.change_set.applied.edge_ids).to.have.length(2);
    expect(await nodeNames(t.api_key)).to.deep.equal(['Ada Lovelace', 'Analytical Engines Ltd', 'Charles Babbage']);

    const applied = await changeSet(t.api_key, id);
    expect(applied).to.include({
      status: 'applied',
      resolved_by: t.user_id,
      notes: 'Checked the source.',
      preview: null,
    });
    expect(applied.resolved_by_credential.kind).to.equal('user_jwt');
    expect((await as(t.api_key).get(`/v1/approvals/${staged.approval_id}`)).body).to.include({
      status: 'approved',
      resolved_by: t.user_id,
    });

    // The versions say it was a change-set, from which prompt, approved by whom.
    const [nodeId] = approved.body.change_set.applied.node_ids;
    const history = (await as(t.api_key).get(`${NODES}/${nodeId}/history`)).body.versions;
    expect(history).to.have.length(1);
    expect(history[0]).to.include({ operation: 'create', label: 'change_set' });
    expect(history[0].actor).to.include({
      user_id: t.user_id,
      credential_kind: 'user_jwt',
      prompt_id: prompted.body.correlation_id,
    });

    // Resolving twice is 409, and applying was free.
    const again = await resolve(t.user_jwt, staged.approval_id, 'REJECTED');
    expect(again.status).to.equal(409);
    expect(again.body.detail.error).to.equal('approval_resolved');
    expect(await creditBalance(t.tenant_id)).to.equal(15);
  });

  it('the workspace setting stages every update prompt; a rejected one writes nothing, keeps its charge', async () => {
    const t = await newTenant(20);
    const setting = await as(t.user_jwt).patch('/v1/ontology/config', { staging: { update_prompts: true } });
    expect(setting.body.staging).to.deep.equal({ update_prompts: true, agent_writes: false });
    // `stage: false` does not opt out of the workspace's setting.
    const prompted = await as(t.api_key).post('/v1/ontology/prompt', { prompt: FACTS, stage: false });
    expect(prompted.status, prompted.text).to.equal(200);
    const id = prompted.body.change_set_id;
    expect(id).to.be.a('string');
    const staged = await changeSet(t.api_key, id);

    const rejected = await resolve(t.user_jwt, staged.approval_id, 'REJECTED', 'Not from a source we trust.');
    expect(rejected.status, rejected.text).to.equal(200);
    expect(rejected.body).to.include({ status: 'rejected' });
    expect(rejected.body.change_set).to.deep.include({ status: 'rejected', applied: null, conflicts: [] });
    expect(await nodeNames(t.api_key)).to.deep.equal([]);
    expect((await changeSet(t.api_key, id)).status).to.equal('rejected');
    // The model work happened: a rejected change-set is not refunded.
    expect(await creditBalance(t.tenant_id)).to.equal(15);
    expect((await resolve(t.user_jwt, staged.approval_id, 'APPROVED')).status).to.equal(409);
  });

  it('a property changed since staging is a conflict at apply: reported, and nothing written', async () => {
    const t = await newTenant(20);
    // Ada exists (written directly); the staged prompt references her and proposes a property of her.
    expect(
      (await as(t.api_key).post('/v1/ontology/prompt', { prompt: 'Ada Lovelace works at Analytical Engines Ltd.' }))
        .status,
    ).to.equal(200);
    const ada = ((await as(t.api_key).get(`${NODES}?type=person`)).body as any[]).find(
      (n) => n.name === 'Ada Lovelace',
    );
    const prompted = await as(t.api_key).post('/v1/ontology/prompt', {
      prompt: 'Ada Lovelace mentored Grace Hopper.\nrole: mentor',
      stage: true,
    });
    expect(prompted.status, prompted.text).to.equal(200);
    const staged = await changeSet(t.api_key, prompted.body.change_set_id);
    expect(staged.operations.property_changes).to.deep.equal([
      { node_ref: staged.operations.nodes[0].ref, node_id: ada.id, key: 'role', before: null, after: 'mentor' },
    ]);
    expect(staged.preview.nodes.map((n: any) => [n.name, n.action])).to.deep.equal([
      ['Ada Lovelace', 'reference'],
      ['Grace Hopper', 'create'],
    ]);

    // Someone edits Ada meanwhile: the preview shows it stale, the apply refuses all of it.
    await as(t.user_jwt).patch(`${NODES}/${ada.id}`, { properties: { role: 'engineer' } });
    const stale = await changeSet(t.api_key, prompted.body.change_set_id);
    expect(stale.preview.property_changes[0]).to.deep.include({
      before: null,
      now: 'engineer',
      after: 'mentor',
      stale: true,
    });
    expect(stale.preview.conflicts.map((c: any) => c.kind)).to.deep.equal(['property_changed']);

    const resolved = await resolve(t.user_jwt, staged.approval_id, 'APPROVED');
    expect(resolved.status, resolved.text).to.equal(200);
    expect(resolved.body.change_set.status).to.equal('conflicted');
    expect(resolved.body.change_set.conflicts).to.deep.equal([
      {
        kind: 'property_changed',
        ref: staged.operations.nodes[0].ref,
        node_id: ada.id,
        key: 'role',
        before: null,
        now: 'engineer',
        message: 'The property role of Ada Lovelace changed since the change-set was staged',
      },
    ]);
    expect(await nodeNames(t.api_key)).to.deep.equal(['Ada Lovelace', 'Analytical Engines Ltd']);
    expect((await as(t.api_key).get(`${NODES}/${ada.id}`)).body.properties).to.deep.equal({ role: 'engineer' });
    const after = await changeSet(t.api_key, prompted.body.change_set_id);
    expect(after).to.include({ status: 'conflicted', applied: null });
    expect(after.conflicts).to.have.length(1);
    expect((await resolve(t.user_jwt, staged.approval_id, 'APPROVED')).status).to.equal(409);
  });

  it('an agent’s write capability is staged where the workspace says so; agents never resolve', async () => {
    const t: Tenant = await newTenant();
    await as(t.user_jwt).patch('/v1/ontology/config', { staging: { agent_writes: true } });
    const method = await createNode(t.api_key, 'code.method', 'Parser.parse');
    const minted = await as(t.user_jwt).post('/v1/mcp/token', { workspace_id: t.workspace_id });
    const agent = minted.body.token;
    const finding = {
      target_node_id: method,
      severity: 'high',
      kind: 'bug',
      title: 'Retry loop never backs off',
    };

    const staged = await capClient(agent)('agent.record_finding', finding, 'finding-1');
    expect(staged.status, staged.text).to.equal(200);
    expect(staged.body.result).to.include({ finding_id: null, target_node_id: method });
    const id = staged.body.result.change_set_id;
    const proposed = await changeSet(t.api_key, id);
    expect(proposed.source).to.deep.equal({
      kind: 'capability',
      prompt_id: null,
      capability: 'agent.record_finding',
      call: 'finding-1',
    });
    expect(proposed.staged_by_credential.kind).to.equal('mcp_token');
    expect(proposed.preview.nodes.map((n: any) => [n.type, n.action])).to.deep.equal([
      ['agent.finding', 'create'],
      ['code.method', 'reference'],
    ]);
    expect(await nodeNames(t.api_key)).to.deep.equal(['Parser.parse']);

    // A key (not an agent's credential) writes directly.
    const direct = await capClient(t.api_key)('agent.record_finding', { ...finding, title: 'Direct' });
    expect(direct.body.result.finding_id).to.be.a('string');
    expect(direct.body.result).not.to.have.property('change_set_id');

    // An MCP token never holds approvals:write.
    expect((await resolve(agent, proposed.approval_id, 'APPROVED')).status).to.equal(403);
    const approved = await resolve(t.user_jwt, proposed.approval_id, 'APPROVED');
    expect(approved.body.change_set.status).to.equal('applied');
    const [findingId] = approved.body.change_set.applied.node_ids;
    const node = (await as(t.api_key).get(`${NODES}/${findingId}`)).body;
    expect(node).to.include({ type: 'agent.finding', name: 'Retry loop never backs off' });
    const edges = (await as(t.api_key).get(`/v1/ontology/edges?source_node_id=${findingId}`)).body;
    expect(edges.map((e: any) => [e.type, e.target_node_id])).to.deep.equal([['FINDING_OF', method]]);
    const [version] = (await as(t.api_key).get(`${NODES}/${findingId}/history`)).body.versions;
    expect(version).to.include({ label: 'change_set' });
    expect(version.actor).to.include({
      capability: 'agent.record_finding',
      capability_call: 'finding-1',
      credential_kind: 'user_jwt',
    });
  });

  it('an agent’s change-set approved after its token was revoked applies nothing', async () => {
    const t: Tenant = await newTenant();
    await as(t.user_jwt).patch('/v1/ontology/config', { staging: { agent_writes: true } });
    const method = await createNode(t.api_key, 'code.method', 'Lexer.next');
    const tokens = `/v1/workspaces/${t.workspace_id}/mcp-tokens`;
    const minted = await as(t.user_jwt).post(tokens, { name: 'agent' });
    const staged = await capClient(minted.body.token)('agent.record_finding', {
      target_node_id: method,
      severity: 'low',
      kind: 'bug',
      title: 'Staged, then its agent revoked',
    });
    expect(staged.status, staged.text).to.equal(200);
    const proposed = await changeSet(t.api_key, staged.body.result.change_set_id);
    expect((await as(t.user_jwt).delete(`${tokens}/${minted.body.id}`)).status).to.equal(204);

    // Deferred work acts only while the identity that started it still may: a person's approval included.
    const approved = await resolve(t.user_jwt, proposed.approval_id, 'APPROVED');
    expect(approved.status, approved.text).to.equal(200);
    expect(approved.body.change_set.status).to.equal('conflicted');
    expect(approved.body.change_set.conflicts.map((c: any) => c.kind)).to.deep.equal(['credential_revoked']);
    expect(await nodeNames(t.api_key)).to.deep.equal(['Lexer.next']);
    expect((await changeSet(t.api_key, proposed.change_set_id)).status).to.equal('conflicted');
  });

  it('a node deleted since staging is a conflict; RESPOND, edits and an unknown status are refused', async () => {
    const t = await newTenant();
    await as(t.user_jwt).patch('/v1/ontology/config', { staging: { agent_writes: true } });
    const method = await createNode(t.api_key, 'code.method', 'Queue.drain');
    const agent = (await as(t.user_jwt).post('/v1/mcp/token', { workspace_id: t.workspace_id })).body.token;
    const staged = await capClient(agent)('agent.record_finding', {
      target_node_id: method,
      severity: 'low',
      kind: 'smell',
      title: 'Drains twice',
    });
    const proposed = await changeSet(t.api_key, staged.body.result.change_set_id);
    for (const body of [
      { decision: 'RESPOND', message: 'no' },
      { decision: 'APPROVED', input: { title: 'edited' } },
    ]) {
      const refused = await as(t.user_jwt).post(`/v1/approvals/${proposed.approval_id}/resolve`, body);
      expect(refused.status, refused.text).to.equal(422);
    }
    expect((await as(t.api_key).get('/v1/ontology/change-sets?status=open')).status).to.equal(422);

    expect((await as(t.api_key).delete(`${NODES}/${method}`)).status).to.equal(200);
    const missing = await changeSet(t.api_key, proposed.change_set_id);
    expect(missing.preview.nodes.map((n: any) => n.action)).to.deep.equal(['create', 'missing']);
    const resolved = await resolve(t.user_jwt, proposed.approval_id, 'APPROVED');
    expect(resolved.body.change_set.status).to.equal('conflicted');
    expect(resolved.body.change_set.conflicts.map((c: any) => [c.kind, c.node_id])).to.deep.equal([
      ['node_deleted', method],
    ]);
    expect(await nodeNames(t.api_key)).to.deep.equal([]);
    expect((await as(t.api_key).get('/v1/ontology/change-sets?status=conflicted')).body.change_sets).to.have.length(1);
  });

  it('another workspace’s change-set is 404; with two members the stager’s user needs a colleague', async () => {
    const t = await newTenant(20);
    const stranger = await newTenant();
    const prompted = await as(t.api_key).post('/v1/ontology/prompt', { prompt: FACTS, stage: true });
    const staged = await changeSet(t.api_key, prompted.body.change_set_id);
    expect((await as(stranger.api_key).get(`/v1/ontology/change-sets/${staged.change_set_id}`)).status).to.equal(404);
    expect((await as(stranger.api_key).get(`/v1/approvals/${staged.approval_id}`)).status).to.equal(404);
    expect((await resolve(stranger.user_jwt, staged.approval_id, 'APPROVED')).status).to.equal(404);
    expect((await as(stranger.api_key).get('/v1/ontology/change-sets')).body.change_sets).to.deep.equal([]);
    expect((await as(stranger.api_key).get('/v1/approvals')).body.approvals).to.deep.equal([]);
    expect((await changeSet(t.api_key, staged.change_set_id)).status).to.equal('pending');

    // With a colleague in the workspace, the stager's other credentials may not decide (when_alone).
    const colleague = await newMember(t.workspace_id);
    const byStager = await resolve(t.user_jwt, staged.approval_id, 'APPROVED');
    expect(byStager.status).to.equal(403);
    expect(byStager.body.detail.error).to.equal('approval_by_dispatching_user');
    expect(byStager.body.detail.message).to.contain('change-sets you staged');
    const approved = await resolve(colleague.user_jwt, staged.approval_id, 'APPROVED');
    expect(approved.body.change_set.status).to.equal('applied');
    expect((await changeSet(t.api_key, staged.change_set_id)).resolved_by).to.equal(colleague.user_id);
  });
});
