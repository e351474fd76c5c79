import { expect } from 'chai';
import { eventually } from '../helpers/eventually';
import type { FaultStack } from '../helpers/fault-stack';
import { report, startFaultStack } from '../helpers/fault-stack';
import { as } from '../helpers/http';
import { startMcpRemote } from '../helpers/remote-tools';
import { pendingApproval } from '../helpers/runs';
import { getStack } from '../helpers/stack';
import { creditBalance, newMember, newTenant } from '../helpers/tenants';

// Issue 41: a connector's write tool is called once, even when the worker making the call is
// SIGKILLed mid-call and its activity is tried again by the next worker. The remote MCP server
// (the official SDK's) records the call and holds its answer until the worker is dead.

describe('fault: the worker SIGKILLed mid-call of a connector’s write tool', function () {
  this.timeout(300_000);
  let stack: FaultStack;
  let mcp: Awaited<ReturnType<typeof startMcpRemote>>;

  before(async () => {
    const suite = getStack();
    mcp = await startMcpRemote({ holdWrites: true });
    stack = await startFaultStack({
      databaseUrl: suite.config.DATABASE_URL,
      databaseOwnerUrl: suite.config.DATABASE_OWNER_URL,
      temporalAddress: suite.config.TEMPORAL_ADDRESS,
      temporalClient: suite.runtime.temporal.client,
      env: { CONNECTOR_ALLOWED_CIDRS: '127.0.0.1/32' },
    });
  });
  after(async () => {
    mcp?.releaseWrites();
    await stack?.stop();
    await mcp?.stop();
  });

  it('is not called again: the step fails outcome_unknown, its charge refunded', async () => {
    const tenant = await newTenant(100);
    const api = as(tenant.api_key, stack.api.baseUrl);
    const reviewer = as((await newMember(tenant.workspace_id)).api_key, stack.api.baseUrl);
    const created = await api.post('/v1/connectors', {
      name: 'tracker',
      kind: 'mcp',
      url: mcp.url,
      auth: { type: 'none' },
    });
    expect(created.status, created.text).to.equal(201);

    const dispatched = await api.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'tracker.create_issue', input: { title: 'exactly once' } }] },
    });
    expect(dispatched.status, dispatched.text).to.equal(202);
    const executionId = dispatched.body.execution_id;
    const approval = await pendingApproval(api, executionId);
    const resolved = await reviewer.post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    expect(resolved.status, resolved.text).to.equal(200);

    await eventually(() => mcp.writes.length === 1, { what: 'the remote end to receive the write', timeoutMs: 60_000 });
    await stack.replaceWorker(0);
    // The answer now goes to a dead connection; the next worker's retry must not send the call again.
    mcp.releaseWrites();
    report('injected: the worker SIGKILLed while the remote write was in flight; a new worker started');

    const run = await eventually(
      async () => {
        const answer = await api.get(`/v1/runs/${executionId}`);
        return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(answer.body.status) ? answer.body : undefined;
      },
      { what: 'the run to finish after the retried step', timeoutMs: 180_000, intervalMs: 500 },
    );
    report(`found: run ${run.status}, step ${JSON.stringify(run.steps[0].error)}, remote calls ${mcp.writes.length}`);
    expect(
      mcp.writes.map((write) => write.key),
      'one call, under the step’s key',
    ).to.deep.equal([`${executionId}:0`]);
    expect(run.status).to.equal('FAILED');
    expect(JSON.stringify(run.steps[0].error)).to.contain('outcome_unknown');
    await eventually(async () => (await creditBalance(tenant.tenant_id)) === 100, {
      what: 'the failed call’s charge to be refunded',
    });
  });
});
