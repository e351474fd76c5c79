import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { capClient } from './helpers/cap';
import { createNode } from './helpers/graph';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

describe('agent findings: agent.record_finding, agent.get_findings', () => {
  let tenant: Awaited<ReturnType<typeof newTenant>>;
  let cap: ReturnType<typeof capClient>;
  let method: string;

  before(async () => {
    tenant = await newTenant();
    cap = capClient(tenant.api_key);
    method = await createNode(tenant.api_key, 'code.method', 'Parser.parse');
  });

  it('records a finding as an agent.finding node linked FINDING_OF to its code.* target', async () => {
    const { session_id } = (await cap('agent.start_session')).body.result;
    const recorded = await cap('agent.record_finding', {
      target_node_id: method,
      severity: 'high',
      kind: 'bug',
      title: 'Off-by-one in the tokenizer',
      detail: 'The last token is dropped when the input ends without a newline.',
      session_id,
    });
    expect(recorded.status).to.equal(200);
    const { finding_id } = recorded.body.result;
    expect(recorded.body.result.target_node_id).to.equal(method);

    const node = await as(tenant.api_key).get(`/v1/ontology/nodes/${finding_id}`);
    expect(node.body).to.include({ type: 'agent.finding', name: 'Off-by-one in the tokenizer' });
    expect(node.body.properties).to.include({ severity: 'high', kind: 'bug', session_id });

    // The FINDING_OF edge makes it part of the graph: a traversal from the target reaches it.
    const around = await as(tenant.api_key).get(`/v1/ontology/graph_neighborhood?node_id=${method}&hops=1`);
    expect(around.body.nodes.map((n: { id: string }) => n.id)).to.include(finding_id);
    const edges = await as(tenant.api_key).get(`/v1/ontology/edges?source_node_id=${finding_id}`);
    expect(edges.body.map((e: any) => [e.type, e.target_node_id])).to.deep.equal([['FINDING_OF', method]]);

    const listed = await cap('agent.get_findings', { target_node_id: method });
    expect(listed.body.result.findings[0]).to.deep.include({
      finding_id,
      target_node_id: method,
      severity: 'high',
      kind: 'bug',
      title: 'Off-by-one in the tokenizer',
      session_id,
    });
  });

  it('refuses a target that is not a code.* node with 422, and an unknown one with 404', async () => {
    const person = await createNode(tenant.api_key, 'person', 'Ada');
    const wrongType = await cap('agent.record_finding', {
      target_node_id: person,
      severity: 'low',
      kind: 'bug',
      title: 't',
    });
    expect(wrongType.status).to.equal(422);
    expect(wrongType.body.detail[0].loc).to.deep.equal(['body', 'target_node_id']);
    const unknown = await cap('agent.record_finding', {
      target_node_id: randomUUID(),
      severity: 'low',
      kind: 'bug',
      title: 't',
    });
    expect(unknown.status).to.equal(404);
    const badSeverity = await cap('agent.record_finding', {
      target_node_id: method,
      severity: 'fatal',
      kind: 'b',
      title: 't',
    });
    expect(badSeverity.status).to.equal(422);
  });

  it('filters by target and severity, newest first', async () => {
    const { api_key } = await newTenant();
    const c = capClient(api_key);
    const [f1, f2] = [await createNode(api_key, 'code.file', 'a.ts'), await createNode(api_key, 'code.file', 'b.ts')];
    const record = async (target: string, severity: string, title: string) =>
      (await c('agent.record_finding', { target_node_id: target, severity, kind: 'complexity', title })).body.result
        .finding_id as string;
    const a = await record(f1, 'low', 'a');
    const b = await record(f1, 'critical', 'b');
    const d = await record(f2, 'critical', 'd');

    const ofF1 = (await c('agent.get_findings', { target_node_id: f1 })).body.result;
    expect(ofF1.findings.map((f: any) => f.finding_id)).to.deep.equal([b, a]);
    const critical = (await c('agent.get_findings', { severity: 'critical' })).body.result;
    expect(critical.findings.map((f: any) => f.finding_id)).to.deep.equal([d, b]);
    const both = (await c('agent.get_findings', { target_node_id: f1, severity: 'critical' })).body.result;
    expect(both.findings.map((f: any) => f.finding_id)).to.deep.equal([b]);
  });

  it('caps an unscoped read at 200 rows, newest first', async () => {
    const { api_key, workspace_id } = await newTenant();
    const target = await createNode(api_key, 'code.file', 'big.ts');
    const owner = getStack().ownerDataSource;
    const findings: { id: string }[] = await owner.query(
      `INSERT INTO nodes (workspace_id, type, name, properties, created_at)
       SELECT $1, 'agent.finding', 'f' || i,
              jsonb_build_object('severity', 'info', 'kind', 'dead_code', 'title', 'f' || i),
              now() - make_interval(secs => i)
       FROM generate_series(1, 205) i RETURNING id`,
      [workspace_id],
    );
    await owner.query(
      `INSERT INTO edges (workspace_id, type, source_node_id, target_node_id)
       SELECT $1, 'FINDING_OF', id, $2 FROM unnest($3::uuid[]) id`,
      [workspace_id, target, findings.map((f) => f.id)],
    );
    const c = capClient(api_key);
    const unscoped = (await c('agent.get_findings', {})).body.result;
    expect(unscoped.findings).to.have.length(200);
    expect(unscoped.truncated).to.equal(true);
    expect(unscoped.findings[0].finding_id).to.equal(findings[0]!.id);
    const times = unscoped.findings.map((f: any) => f.created_at);
    expect([...times].sort().reverse()).to.deep.equal(times);
    const scoped = (await c('agent.get_findings', { target_node_id: target })).body.result;
    expect(scoped.findings).to.have.length(205);
    expect(scoped.truncated).to.equal(false);
  });

  it('answers 404 for another workspace’s target, and shows it none of this one’s findings', async () => {
    const attacker = capClient((await newTenant()).api_key);
    await cap('agent.record_finding', { target_node_id: method, severity: 'info', kind: 'note', title: 'mine' });
    const onVictim = await attacker('agent.record_finding', {
      target_node_id: method,
      severity: 'info',
      kind: 'note',
      title: 'planted',
    });
    expect(onVictim.status).to.equal(404);
    expect((await attacker('agent.get_findings', { target_node_id: method })).status).to.equal(404);
    expect((await attacker('agent.get_findings', {})).body.result.findings).to.deep.equal([]);
  });
});
