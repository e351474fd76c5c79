import { expect } from 'chai';
import { capabilityKeyPurgeWorkflow } from '../src/capabilities/workflow';
import { as } from './helpers/http';
import { startMcpRemote } from './helpers/remote-tools';
import { finished, pendingApproval, succeeded } from './helpers/runs';
import type { Stack } from './helpers/stack';
import { bootStack } from './helpers/stack';
import { newMember, newTenant } from './helpers/tenants';

// Issue 41 item 2, "a schema that changed at a refresh is a new version; a run keeps the version it
// started with": against a real MCP server on loopback whose `create_issue` changes under a waiting run.

type Api = ReturnType<typeof as>;

describe('connector versions: a run keeps the versions it started with (issue 41)', function () {
  this.timeout(120_000);
  let variant: { stack: Stack; stop: () => Promise<void> };
  let tenant: Awaited<ReturnType<typeof newTenant>>;
  let api: Api;
  let reviewer: Api;
  const remotes: Awaited<ReturnType<typeof startMcpRemote>>[] = [];

  before(async () => {
    variant = await bootStack({ CONNECTOR_ALLOWED_CIDRS: '127.0.0.1/32' });
    tenant = await newTenant(100);
    api = as(tenant.api_key, variant.stack.baseUrl);
    reviewer = as((await newMember(tenant.workspace_id)).api_key, variant.stack.baseUrl);
  });
  after(async () => {
    for (const remote of remotes) await remote.stop();
    await variant?.stop();
  });

  /** A connector of its own MCP server (so each test changes its own remote end). */
  const connectorOf = async (name: string) => {
    const remote = await startMcpRemote();
    remotes.push(remote);
    const created = await api.post('/v1/connectors', { name, kind: 'mcp', url: remote.url });
    expect(created.status, created.text).to.equal(201);
    expect(created.body.version).to.equal(1);
    return { remote, connector: created.body };
  };
  const createIssue = (version: { tools: any[] }, name: string) => version.tools.find((tool) => tool.name === name);
  const dispatch = async (tool: string, input: Record<string, unknown>) => {
    const run = await api.post('/v1/runs', { agent: 'playbook', input: { steps: [{ tool, input }] } });
    expect(run.status, run.text).to.equal(202);
    return run.body.execution_id as string;
  };
  const approve = async (executionId: string, input?: Record<string, unknown>) => {
    const approval = await pendingApproval(api, executionId);
    return reviewer.post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'APPROVED',
      ...(input ? { input } : {}),
    });
  };

  it('runs a waiting step with the schema of the version its run started with, a new run the new one', async () => {
    const { remote, connector } = await connectorOf('pinned');
    const kept = await dispatch('pinned.create_issue', { title: 'kept' });
    await pendingApproval(api, kept);
    const keptRun = (await api.get(`/v1/runs/${kept}`)).body;
    expect(keptRun.connector_versions).to.deep.include({ connector_id: connector.id, name: 'pinned', version: 1 });

    // The remote end now requires `priority`: a refresh makes version 2, listed as current.
    remote.revise('priority');
    const refreshed = await api.post(`/v1/connectors/${connector.id}/refresh`);
    expect(refreshed.status, refreshed.text).to.equal(200);
    expect(refreshed.body.version).to.equal(2);
    expect(createIssue(refreshed.body, 'pinned.create_issue').input_schema.required).to.include('priority');
    const first = await api.get(`/v1/connectors/${connector.id}/versions/1`);
    expect(first.status, first.text).to.equal(200);
    expect(first.body).to.include({ version: 1, current: false, name: 'pinned' });
    expect(createIssue(first.body, 'pinned.create_issue')).to.deep.include({
      description: 'Files an issue',
      input_schema: createIssue(connector, 'pinned.create_issue').input_schema,
    });
    expect((await api.get(`/v1/connectors/${connector.id}/versions/2`)).body).to.include({ current: true });

    // A new run is judged by version 2: without `priority` its step is refused at dispatch.
    const refused = await api.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'pinned.create_issue', input: { title: 'new' } }] },
    });
    expect(refused.status, refused.text).to.equal(422);
    const fresh = await dispatch('pinned.create_issue', { title: 'new', priority: 'high' });
    const pinnedOf = (run: { connector_versions: any[] }) =>
      run.connector_versions.find((pin) => pin.connector_id === connector.id).version;
    expect(pinnedOf((await api.get(`/v1/runs/${fresh}`)).body)).to.equal(2);

    // The waiting run is still judged by version 1: an edit without `priority` is accepted, and so is its step.
    const resolved = await approve(kept, { title: 'kept, edited' });
    expect(resolved.status, resolved.text).to.equal(200);
    const keptDone = await succeeded(api, kept);
    expect(keptDone.steps[0].output).to.include({ title: 'kept, edited', priority: 'low' });
    expect(pinnedOf(keptDone)).to.equal(1);
    expect((await approve(fresh)).status).to.equal(200);
    expect((await succeeded(api, fresh)).steps[0].output).to.include({ title: 'new', priority: 'high' });
    expect(remote.writes.map(({ title, key }) => [title, key])).to.deep.equal([
      ['kept, edited', `${kept}:0`],
      ['new', `${fresh}:0`],
    ]);
  });

  it('gives a child run its parent’s versions, not the ones current when the child starts', async () => {
    const { remote, connector } = await connectorOf('kin');
    const child = { agent: 'playbook', input: { steps: [{ tool: 'kin.lookup_issue', input: { id: 2 } }] } };
    const parent = await api.post('/v1/runs', {
      agent: 'playbook',
      input: {
        steps: [
          { tool: 'kin.create_issue', input: { title: 'gate' } },
          { tool: 'runs.dispatch', input: child },
        ],
      },
    });
    expect(parent.status, parent.text).to.equal(202);
    const parentId = parent.body.execution_id;
    await pendingApproval(api, parentId);
    remote.revise('priority');
    expect((await api.post(`/v1/connectors/${connector.id}/refresh`)).body.version).to.equal(2);
    expect((await approve(parentId)).status).to.equal(200);
    const done = await succeeded(api, parentId);
    const childRun = await succeeded(api, done.steps[1].output.execution_id);
    expect(childRun.parent_execution_id).to.equal(parentId);
    expect(childRun.connector_versions).to.deep.include({ connector_id: connector.id, name: 'kin', version: 1 });
    expect(childRun.connector_versions).to.deep.equal(done.connector_versions);
  });

  it('fails a kept version’s step tool_version_gone when the remote end no longer has the tool', async () => {
    const { remote, connector } = await connectorOf('fading');
    const waiting = await dispatch('fading.create_issue', { title: 'too late' });
    await pendingApproval(api, waiting);
    remote.revise('no_create');
    const refreshed = await api.post(`/v1/connectors/${connector.id}/refresh`);
    expect(refreshed.body.version).to.equal(2);
    expect(createIssue(refreshed.body, 'fading.create_issue')).to.equal(undefined);

    expect((await approve(waiting)).status).to.equal(200);
    const ended = await finished(api, waiting);
    expect(ended.status).to.equal('FAILED');
    expect(ended.steps[0].error.message).to.include('tool_version_gone');
    expect(ended.steps[0].credits_charged).to.equal(0);
    expect(remote.writes).to.deep.equal([]);
    // A new run does not know the tool at all.
    const unknown = await api.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'fading.create_issue', input: { title: 'x' } }] },
    });
    expect(unknown.status, unknown.text).to.equal(422);
  });

  it('shows another workspace neither the versions nor a run’s pins (404)', async () => {
    const { connector } = await connectorOf('private');
    const other = as((await newTenant(5)).api_key, variant.stack.baseUrl);
    const read = await other.get(`/v1/connectors/${connector.id}/versions/1`);
    expect(read.status).to.equal(404);
    expect(read.text).to.not.include('create_issue');
    expect((await api.get(`/v1/connectors/${connector.id}/versions/9`)).status).to.equal(404);
    expect((await api.get(`/v1/connectors/${connector.id}/versions/0`)).status).to.equal(422);
    const run = await dispatch('private.lookup_issue', { id: 1 });
    expect((await other.get(`/v1/runs/${run}`)).status).to.equal(404);
    await succeeded(api, run);
  });

  it('keeps an old version while a run started with it is unfinished; the maintenance pass prunes it', async () => {
    const { remote, connector } = await connectorOf('pruned');
    const waiting = await dispatch('pruned.create_issue', { title: 'held' });
    await pendingApproval(api, waiting);
    remote.revise('priority');
    expect((await api.post(`/v1/connectors/${connector.id}/refresh`)).body.version).to.equal(2);
    const purge = () => variant.stack.runtime.temporal.workflows.start(capabilityKeyPurgeWorkflow, { batchSize: 2 });

    await (await purge()).result();
    expect((await api.get(`/v1/connectors/${connector.id}/versions/1`)).status).to.equal(200);
    expect((await api.post(`/v1/runs/${waiting}/cancel`)).status).to.be.below(300);
    expect((await finished(api, waiting)).status).to.equal('CANCELLED');
    const pruned = await (await purge()).result();
    expect(pruned.connectorVersions).to.be.at.least(1);
    expect((await api.get(`/v1/connectors/${connector.id}/versions/1`)).status).to.equal(404);
    expect((await api.get(`/v1/connectors/${connector.id}/versions/2`)).status).to.equal(200);
  });

  it('deletes the call ledger’s rows past the replay window in the maintenance pass, not during calls', async () => {
    const { connector } = await connectorOf('ledger');
    const owner = variant.stack.ownerDataSource;
    await owner.query(
      `INSERT INTO connector_calls (workspace_id, idempotency_key, connector_id, tool, sent_at) VALUES
         ($1, 'old-call', $2, 'ledger.create_issue', now() - interval '25 hours'),
         ($1, 'young-call', $2, 'ledger.create_issue', now() - interval '1 hour')`,
      [tenant.workspace_id, connector.id],
    );
    // A write call leaves the expired row where it is.
    const run = await dispatch('ledger.create_issue', { title: 'one' });
    expect((await approve(run)).status).to.equal(200);
    await succeeded(api, run);
    const keys = async () =>
      (
        await owner.query(`SELECT idempotency_key FROM connector_calls WHERE connector_id = $1 ORDER BY 1`, [
          connector.id,
        ])
      ).map((row: { idempotency_key: string }) => row.idempotency_key);
    expect(await keys()).to.deep.equal([`${run}:0`, 'old-call', 'young-call']);

    const purged = await (
      await variant.stack.runtime.temporal.workflows.start(capabilityKeyPurgeWorkflow, { batchSize: 1 })
    ).result();
    expect(purged.connectorCalls).to.be.at.least(1);
    expect(await keys()).to.deep.equal([`${run}:0`, 'young-call']);
  });
});
