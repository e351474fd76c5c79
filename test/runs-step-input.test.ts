import { expect } from 'chai';
import { as } from './helpers/http';
import { finished, pendingApproval, succeeded } from './helpers/runs';
import { newTenant } from './helpers/tenants';
import { deliver, newTrigger } from './helpers/webhooks';

type Client = ReturnType<typeof as>;

/** Step 0 writes a node named from the run's params; step 1 reads it by the id step 0 answered. */
const writeThenRead = (nodeId: unknown, readApproval = false) => ({
  agent: 'playbook',
  input: {
    params: { who: 'Ada Lovelace' },
    steps: [
      { tool: 'ontology.write_node', input: { type: 'person', name: { $from: 'input.params.who' } } },
      { tool: 'ontology.get_node', input: { node_id: nodeId }, requires_approval: readApproval },
    ],
  },
});

const dispatch = async (client: Client, body: unknown): Promise<string> => {
  const answer = await client.post('/v1/runs', body);
  expect(answer.status, answer.text).to.equal(202);
  return answer.body.execution_id;
};

describe('runs: data between steps (issue 40 item 5)', () => {
  it("resolves a step's $from values from the run's input and an earlier step's output", async () => {
    const client = as((await newTenant()).api_key);
    const id = await dispatch(client, writeThenRead({ $from: 'steps[0].output.node.id' }));
    const run = await succeeded(client, id);
    const nodeId = run.steps[0].output.node.id;
    expect(run.steps[0].input).to.deep.equal({ type: 'person', name: 'Ada Lovelace' });
    // The step row shows the input the step ran with, and so does its link of the audit chain.
    expect(run.steps[1].input).to.deep.equal({ node_id: nodeId });
    expect(run.output.node).to.include({ id: nodeId, name: 'Ada Lovelace' });
    expect(run.input.params).to.deep.equal({ who: 'Ada Lovelace' });
    const audit = (await client.get(`/v1/runs/${id}/audit`)).body;
    expect(audit.valid).to.equal(true);
    const link = audit.steps.find((entry: any) => entry.kind === 'TOOL' && entry.entry.step_no === 1);
    expect(link.entry.input).to.deep.equal({ node_id: nodeId });
  });

  it('fails the step with input_unresolved when an expression yields nothing, nothing run or charged', async () => {
    const client = as((await newTenant()).api_key);
    const id = await dispatch(client, writeThenRead({ $from: 'steps[0].output.node.missing' }));
    const run = await finished(client, id);
    expect(run.status).to.equal('FAILED');
    expect(run.error).to.include({ code: 'input_unresolved', step: 1 });
    expect(run.error.message).to.contain('input.node_id').and.to.contain('yields nothing');
    expect(run.steps[0].status).to.equal('SUCCEEDED');
    expect(run.steps[1]).to.include({ status: 'FAILED', credits_charged: 0, started_at: null });
    expect(run.steps[1].error.code).to.equal('input_unresolved');
  });

  it('fails the step when the expression fails on the data (a function of the wrong type)', async () => {
    const client = as((await newTenant()).api_key);
    const id = await dispatch(client, writeThenRead({ $from: 'abs(steps[0].output.node.name)' }));
    const run = await finished(client, id);
    expect(run.status).to.equal('FAILED');
    expect(run.error.code).to.equal('input_unresolved');
    expect(run.error.message).to.contain('$from failed');
  });

  it('refuses at dispatch an expression that does not compile (422 naming the step and field)', async () => {
    const client = as((await newTenant()).api_key);
    const refused = await client.post('/v1/runs', writeThenRead({ $from: 'steps[0].output.[' }));
    expect(refused.status).to.equal(422);
    expect(refused.body.detail).to.have.length(1);
    expect(refused.body.detail[0].loc).to.deep.equal(['body', 'input', 'steps', 1, 'input', 'node_id', '$from']);
    expect(refused.body.detail[0].type).to.equal('jmespath');
    const shape = await client.post('/v1/runs', writeThenRead({ $from: 'steps[0]', other: 1 }));
    expect(shape.status).to.equal(422);
    expect(shape.body.detail[0].type).to.equal('from_value');
    // Whatever a $from value is, the tool's schema still checks the rest of the input.
    const rest = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'ontology.get_node', input: { node_id: { $from: 'input.x' }, nope: 1 } }] },
    });
    expect(rest.status).to.equal(422);
    expect(rest.body.detail.map((issue: any) => issue.type)).to.deep.equal(['unrecognized_keys']);
  });

  it('shows the resolved input on the approval of a step that waits for one', async () => {
    const { api_key, user_jwt } = await newTenant();
    const client = as(api_key);
    const id = await dispatch(client, writeThenRead({ $from: 'steps[0].output.node.id' }, true));
    const approval = await pendingApproval(client, id);
    const run = (await client.get(`/v1/runs/${id}`)).body;
    const nodeId = run.steps[0].output.node.id;
    expect(approval.step).to.deep.include({ step_no: 1, tool: 'ontology.get_node', input: { node_id: nodeId } });
    expect(run.steps[1].input).to.deep.equal({ node_id: nodeId });
    const listed = (await client.get('/v1/approvals?status=pending')).body;
    const rows = listed.approvals ?? listed;
    expect(rows.find((row: any) => row.approval_id === approval.approval_id).step.input).to.deep.equal({
      node_id: nodeId,
    });
    const resolved = await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    expect(resolved.status, resolved.text).to.equal(200);
    const done = await succeeded(client, id);
    expect(done.steps[1].input).to.deep.equal({ node_id: nodeId });
    expect(done.output.node.id).to.equal(nodeId);
  });

  it('lets the approval rules judge the resolved input (a filter over it sends the step to approval)', async () => {
    const { api_key, user_jwt } = await newTenant();
    const client = as(api_key);
    const rules = [
      { match: { tool: 'ontology.write_node', input_filter: 'name == `Grace Hopper`' }, action: 'require_approval' },
    ];
    const put = await as(user_jwt).put('/v1/approval-policies', { rules, default_action: 'allow' });
    expect(put.status, put.text).to.equal(200);
    const id = await dispatch(client, {
      agent: 'playbook',
      input: {
        params: { who: 'Grace Hopper' },
        steps: [{ tool: 'ontology.write_node', input: { type: 'person', name: { $from: 'input.params.who' } } }],
      },
    });
    const approval = await pendingApproval(client, id);
    expect(approval.step.input).to.deep.equal({ type: 'person', name: 'Grace Hopper' });
    await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    const run = await succeeded(client, id);
    expect(run.steps[0].policy_decision).to.include({ action: 'require_approval', rule: 0 });
    expect(run.output.node.name).to.equal('Grace Hopper');
  });

  it("takes a webhook trigger's event from the run's input; a template is checked as a dispatch", async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const run = {
      agent: 'playbook',
      input: {
        steps: [{ tool: 'ontology.write_node', input: { type: 'person', name: { $from: 'input.event.body.who' } } }],
      },
    };
    const trigger = await newTrigger(api_key, { run });
    const sent = await deliver(trigger.slug, JSON.stringify({ who: 'Katherine Johnson' }), { secret: trigger.secret });
    expect(sent.status, sent.text).to.equal(202);
    const done = await succeeded(client, sent.body.execution_id);
    expect(done.steps[0].input).to.deep.equal({ type: 'person', name: 'Katherine Johnson' });
    const bad = { ...run, input: { steps: [{ tool: 'ontology.get_node', input: { node_id: { $from: '][' } } }] } };
    const refused = await client.post('/v1/triggers', { slug: 'bad-from-template', run: bad });
    expect(refused.status).to.equal(422);
    expect(refused.body.detail[0].loc).to.deep.equal(['body', 'run', 'input', 'steps', 0, 'input', 'node_id', '$from']);
  });

  it("keeps a reviewer's edit of a resolved input: the step runs with the edit, not resolved again", async () => {
    const { api_key, user_jwt } = await newTenant();
    const client = as(api_key);
    const other = await client.post('/v1/cap/ontology.write_node', { type: 'person', name: 'Grace Hopper' });
    expect(other.status, other.text).to.equal(200);
    const otherId = other.body.result.node.id;
    const id = await dispatch(client, writeThenRead({ $from: 'steps[0].output.node.id' }, true));
    const approval = await pendingApproval(client, id);
    const edited = { node_id: otherId };
    const resolved = await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'APPROVED',
      input: edited,
    });
    expect(resolved.status, resolved.text).to.equal(200);
    const run = await succeeded(client, id);
    expect(run.steps[1].input).to.deep.equal(edited);
    expect(run.output.node.name).to.equal('Grace Hopper');
    expect(run.approvals[0].step.input).to.deep.equal({ node_id: run.steps[0].output.node.id });
  });
});
