import { expect } from 'chai';
import { thaw } from '../src/platform/auth/stored-principal';
import type { DomainError } from '../src/platform/errors';
import { LIMITS } from '../src/rules/limits';
import { capClient } from './helpers/cap';
import { as } from './helpers/http';
import { finished, pendingApproval, runUntil, succeeded } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

type Client = ReturnType<typeof as>;

const playbook = (steps: unknown[]) => ({ agent: 'playbook', input: { steps } });
const balance = { tool: 'billing.credits_balance', input: {} };
const gated = { ...balance, requires_approval: true };
const dispatchStep = (body: unknown) => ({ tool: 'runs.dispatch', input: body });

const children = async (client: Client, parentId: string) =>
  (await client.get(`/v1/runs?parent=${parentId}`)).body.runs as any[];

/** The one child of `parentId`, once its step has started it. */
const childOf = async (client: Client, parentId: string) => {
  const run = await runUntil(
    client,
    parentId,
    (body) => body.steps[0].status === 'SUCCEEDED' || body.steps[0].status === 'FAILED',
    'the dispatching step to finish',
  );
  expect(run.steps[0].status, JSON.stringify(run.steps[0])).to.equal('SUCCEEDED');
  return run.steps[0].output.execution_id as string;
};

const key = async (jwt: string, scopes: string[]) =>
  (await as(jwt).post('/v1/auth/me/api-keys', { name: 'runs-tools', scopes })).body.token as string;

describe('runs as tools: runs.dispatch, runs.get, runs.cancel over /v1/cap (issue 40 item 2)', () => {
  it('dispatch answers as POST /v1/runs, get as GET /v1/runs/{id}, cancel as its route; a key replays', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const cap = capClient(api_key);
    const dispatched = await cap('runs.dispatch', playbook([gated]), 'dispatch-once');
    expect(dispatched.status, JSON.stringify(dispatched.body)).to.equal(200);
    expect(dispatched.body.credits_charged).to.equal(0);
    const id = dispatched.body.result.execution_id;
    expect(dispatched.body.result).to.include({ status: 'QUEUED', was_duplicate: false });

    const again = await cap('runs.dispatch', playbook([gated]), 'dispatch-once');
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body.result.execution_id).to.equal(id);
    expect((await client.get('/v1/runs')).body.runs).to.have.length(1);

    await pendingApproval(client, id);
    const got = await cap('runs.get', { execution_id: id });
    expect(got.status).to.equal(200);
    const direct = (await client.get(`/v1/runs/${id}`)).body;
    expect(got.body.result).to.deep.equal(direct);
    expect(got.body.result).to.include({ parent_execution_id: null, root_execution_id: null });

    const cancelled = await cap('runs.cancel', { execution_id: id });
    expect(cancelled.status).to.equal(200);
    expect(cancelled.body.result).to.include({ execution_id: id, status: 'CANCELLED' });
    expect((await finished(client, id)).status).to.equal('CANCELLED');

    const tools = (await client.get('/v1/cap')).body.tools as any[];
    const described = tools.find((tool) => tool.name === 'runs.dispatch');
    expect(described).to.include({ tag: 'capabilities:write', cost: 0, idempotent: true });
    expect(described.input_schema.type).to.equal('object');
  });

  it('needs the REST routes’ scopes (403), and another workspace’s runs are 404', async () => {
    const { api_key, user_jwt } = await newTenant();
    const own = await as(api_key).post('/v1/runs', playbook([gated]));
    const id = own.body.execution_id;
    const capOnly = capClient(await key(user_jwt, ['capabilities:read', 'capabilities:write']));
    expect((await capOnly('runs.dispatch', playbook([balance]))).status).to.equal(403);
    expect((await capOnly('runs.get', { execution_id: id })).status).to.equal(403);
    expect((await capOnly('runs.cancel', { execution_id: id })).status).to.equal(403);
    const runsOnly = capClient(await key(user_jwt, ['runs:read', 'runs:write']));
    expect((await runsOnly('runs.get', { execution_id: id })).status).to.equal(403);
    const reader = capClient(await key(user_jwt, ['capabilities:read', 'runs:read']));
    expect((await reader('runs.get', { execution_id: id })).status).to.equal(200);

    const stranger = await newTenant();
    const theirs = capClient(stranger.api_key);
    const get = await theirs('runs.get', { execution_id: id });
    expect(get.status).to.equal(404);
    expect(get.body.detail.error).to.equal('run_not_found');
    expect((await theirs('runs.cancel', { execution_id: id })).status).to.equal(404);
    expect(await children(as(stranger.api_key), id)).to.deep.equal([]);

    const bad = await capClient(api_key)('runs.dispatch', { agent: 'playbook', input: { steps: [] } });
    expect(bad.status).to.equal(422);
    await as(api_key).post(`/v1/runs/${id}/cancel`);
  });
});

describe('child runs: a run whose step is runs.dispatch', () => {
  it('starts a child with parent and root ids, listed by ?parent=, named in its step output and chain', async () => {
    const { api_key, workspace_id } = await newTenant();
    const client = as(api_key);
    const grandchildBody = playbook([balance]);
    const parent = await client.post('/v1/runs', playbook([dispatchStep(playbook([dispatchStep(grandchildBody)]))]));
    expect(parent.status, JSON.stringify(parent.body)).to.equal(202);
    const parentId = parent.body.execution_id;
    await succeeded(client, parentId);
    const childId = await childOf(client, parentId);
    const child = await succeeded(client, childId);
    expect(child).to.include({ parent_execution_id: parentId, root_execution_id: parentId });
    const grandchildId = await childOf(client, childId);
    const grandchild = await succeeded(client, grandchildId);
    expect(grandchild).to.include({ parent_execution_id: childId, root_execution_id: parentId });

    expect((await children(client, parentId)).map((run) => run.execution_id)).to.deep.equal([childId]);
    expect((await children(client, childId)).map((run) => run.execution_id)).to.deep.equal([grandchildId]);
    const all = (await client.get('/v1/runs')).body.runs as any[];
    expect(all.find((run) => run.execution_id === parentId)).to.include({ parent_execution_id: null });

    const audit = (await client.get(`/v1/runs/${parentId}/audit`)).body;
    expect(audit.valid).to.equal(true);
    expect(audit.steps[0].entry.output.execution_id).to.equal(childId);

    // The child acts as the identity that started the parent.
    const principals = await getStack().ownerDataSource.query(
      `SELECT id, principal, user_id FROM run_executions WHERE workspace_id = $1`,
      [workspace_id],
    );
    expect(principals).to.have.length(3);
    for (const row of principals) expect(row.principal).to.deep.equal(principals[0].principal);
  });

  it('cancelling a parent cancels its unfinished children and theirs; its dispatcher cannot approve them', async () => {
    const { api_key, user_jwt, workspace_id } = await newTenant();
    const client = as(api_key);
    const body = playbook([dispatchStep(playbook([dispatchStep(playbook([gated])), gated])), gated]);
    const parentId = (await client.post('/v1/runs', body)).body.execution_id;
    await pendingApproval(client, parentId);
    const childId = await childOf(client, parentId);
    await pendingApproval(client, childId);
    const grandchildId = await childOf(client, childId);
    const approval = await pendingApproval(client, grandchildId);

    const own = await client.post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    expect(own.status).to.equal(403);
    expect(own.body.detail.error).to.equal('approval_by_dispatcher');
    const token = (await as(user_jwt).post(`/v1/workspaces/${workspace_id}/mcp-tokens`, { name: 'agent' })).body.token;
    const byToken = await as(token).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    expect(byToken.status).to.equal(403);

    const cancelled = await client.post(`/v1/runs/${parentId}/cancel`);
    expect(cancelled.body.status).to.equal('CANCELLED');
    for (const id of [childId, grandchildId]) {
      const run = (await client.get(`/v1/runs/${id}`)).body;
      expect(run.status).to.equal('CANCELLED');
      expect(run.approvals[0].status).to.equal('cancelled');
    }
    for (const id of [parentId, childId, grandchildId])
      expect((await finished(client, id)).status).to.equal('CANCELLED');
  });

  it('runs.cancel and a cancel_previous dispatch cancel a parent’s unfinished child too', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const parentId = (await client.post('/v1/runs', playbook([dispatchStep(playbook([gated])), gated]))).body
      .execution_id;
    const childId = await childOf(client, parentId);
    await pendingApproval(client, childId);
    const cancelled = await capClient(api_key)('runs.cancel', { execution_id: parentId });
    expect(cancelled.body.result.status).to.equal('CANCELLED');
    expect((await client.get(`/v1/runs/${childId}`)).body.status).to.equal('CANCELLED');

    const concurrency = { key: 'import', limit: 1, policy: 'cancel_previous' };
    const held = { ...playbook([dispatchStep(playbook([gated])), gated]), concurrency };
    const olderId = (await client.post('/v1/runs', held)).body.execution_id;
    const olderChild = await childOf(client, olderId);
    await pendingApproval(client, olderChild);
    const newer = await client.post('/v1/runs', { ...playbook([balance]), concurrency });
    expect(newer.status).to.equal(202);
    for (const id of [olderId, olderChild]) expect((await finished(client, id)).status).to.equal('CANCELLED');
    await succeeded(client, newer.body.execution_id);
  });

  it('a parent waits for the child it started ($from + runs.wait); a waiting child is cancelled with it', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    // Step 1 takes the child's id from step 0's output and waits for it: its output is the child's outcome.
    const waitForChild = { tool: 'runs.wait', input: { execution_id: { $from: 'steps[0].output.execution_id' } } };
    const parentId = (await client.post('/v1/runs', playbook([dispatchStep(playbook([balance])), waitForChild]))).body
      .execution_id;
    const done = await succeeded(client, parentId);
    const childId = done.steps[0].output.execution_id;
    expect(done.steps[1].input).to.deep.equal({ execution_id: childId });
    expect(done.steps[1].output).to.deep.include({ execution_id: childId, status: 'SUCCEEDED' });
    // However the child's finish and the parent's wait met (before the wait held, after, or while it waited),
    // the wait was created and completed once.
    const waits = await getStack().ownerDataSource.query(
      `SELECT type FROM run_events WHERE execution_id = $1 AND type LIKE 'waitpoint.%' ORDER BY id`,
      [parentId],
    );
    expect(waits.map((row: { type: string }) => row.type)).to.deep.equal(['waitpoint.created', 'waitpoint.completed']);

    // A child that sleeps (status WAITING) is unfinished: cancelling its parent cancels it.
    const sleeper = playbook([{ tool: 'run.sleep', input: { seconds: 3600 } }]);
    const otherId = (await client.post('/v1/runs', playbook([dispatchStep(sleeper), waitForChild]))).body.execution_id;
    const sleeping = await childOf(client, otherId);
    await runUntil(client, sleeping, (body) => body.status === 'WAITING', 'the child to sleep');
    expect((await client.post(`/v1/runs/${otherId}/cancel`)).status).to.equal(200);
    expect((await finished(client, sleeping)).status).to.equal('CANCELLED');
  });

  it('a child acts as its parent’s credential: once that key is revoked, its approved step does not run', async () => {
    const { user_jwt, api_key } = await newTenant();
    const created = await as(user_jwt).post('/v1/auth/me/api-keys', {
      name: 'parent',
      scopes: ['runs:read', 'runs:write', 'capabilities:read', 'capabilities:write'],
    });
    const parentKey = as(created.body.token);
    const parentId = (await parentKey.post('/v1/runs', playbook([dispatchStep(playbook([gated]))]))).body.execution_id;
    const reader = as(api_key);
    const childId = await childOf(reader, parentId);
    const approval = await pendingApproval(reader, childId);
    expect((await as(user_jwt).delete(`/v1/auth/me/api-keys/${created.body.id}`)).status).to.equal(200);
    const resolved = await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    expect(resolved.status, resolved.text).to.equal(200);
    const child = await finished(reader, childId);
    expect(child.status).to.equal('FAILED');
    expect(child.error.code).to.equal('credential_revoked');
  });

  it(`nests at most ${LIMITS.runs.maxDepth} levels below the root: deeper is a 422 run_depth_exceeded`, async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    let body: unknown = playbook([balance]);
    for (let level = 0; level <= LIMITS.runs.maxDepth; level += 1) body = playbook([dispatchStep(body)]);
    let id = (await client.post('/v1/runs', body)).body.execution_id;
    for (let depth = 0; depth < LIMITS.runs.maxDepth; depth += 1) id = await childOf(client, id);
    const deepest = await finished(client, id);
    expect(deepest.status).to.equal('FAILED');
    expect(deepest.error.code).to.equal('validation_failed');
    expect(deepest.error.message).to.contain('run_depth_exceeded');
    expect(await children(client, id)).to.deep.equal([]);
  });

  it('a retried step replays the child it started instead of dispatching another', async () => {
    const { api_key, workspace_id } = await newTenant();
    const client = as(api_key);
    const parentId = (await client.post('/v1/runs', playbook([dispatchStep(playbook([balance])), gated]))).body
      .execution_id;
    await pendingApproval(client, parentId);
    const childId = await childOf(client, parentId);
    // A worker lost after the tool call but before the step's row recorded it: the step runs again.
    await getStack().ownerDataSource.query(
      `UPDATE run_steps SET status = 'RUNNING', output = NULL, finished_at = NULL
       WHERE execution_id = $1 AND step_no = 0`,
      [parentId],
    );
    const outcome = await getStack().runtime.services.runSteps.runStep(workspace_id, parentId, 0);
    expect(outcome.status).to.equal('SUCCEEDED');
    const run = (await client.get(`/v1/runs/${parentId}`)).body;
    expect(run.steps[0].output.execution_id).to.equal(childId);
    expect((await children(client, parentId)).map((child) => child.execution_id)).to.deep.equal([childId]);
    await client.post(`/v1/runs/${parentId}/cancel`);

    // A step whose run a cancel ended first starts no child (its dispatch waits on the parent's lock).
    const [row] = await getStack().ownerDataSource.query(`SELECT principal FROM run_executions WHERE id = $1`, [
      parentId,
    ]);
    const late = await getStack()
      .runtime.services.capabilities.invoke(thaw(row.principal, workspace_id), 'runs.dispatch', playbook([balance]), {
        idempotencyKey: `${parentId}:7`,
        runId: parentId,
      })
      .then(
        () => null,
        (error: DomainError) => error,
      );
    expect(late?.detail).to.include({ error: 'run_finished' });
    expect(await children(client, parentId)).to.have.length(1);
  });
});
