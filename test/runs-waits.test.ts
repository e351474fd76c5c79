import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { finished, pendingApproval, runUntil, succeeded } from './helpers/runs';
import type { Stack } from './helpers/stack';
import { bootStack, getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

// Issue 40 item 3 (and `runs.wait` of item 2): durable waits as steps, over real HTTP, Postgres and Temporal.

type Api = ReturnType<typeof as>;

const dispatch = async (client: Api, steps: unknown[]) => {
  const answer = await client.post('/v1/runs', { agent: 'playbook', input: { steps } });
  expect(answer.status, JSON.stringify(answer.body)).to.equal(202);
  return answer.body.execution_id as string;
};

/** The run once it waits on its waitpoint (status WAITING). */
const waiting = (client: Api, id: string) =>
  runUntil(client, id, (run) => run.status === 'WAITING', 'the run to wait on its waitpoint');

const eventsOf = async (id: string) =>
  (await getStack().ownerDataSource.query(`SELECT type, data FROM run_events WHERE execution_id = $1 ORDER BY id`, [
    id,
  ])) as { type: string; data: any }[];

const waitFor = (extra: Record<string, unknown> = {}) => ({
  tool: 'run.wait_for',
  input: {
    name: 'invoice approved',
    timeout_seconds: 3600,
    output_schema: { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean' } } },
    ...extra,
  },
});

describe('runs: durable waits as steps (issue 40 item 3)', function () {
  this.timeout(120_000);

  it('run.sleep then a tool: the run waits (WAITING), then finishes; the sleep step says when it woke', async () => {
    const { api_key } = await newTenant(100);
    const client = as(api_key);
    const id = await dispatch(client, [
      { tool: 'run.sleep', input: { seconds: 1 } },
      { tool: 'billing.credits_balance', input: {} },
    ]);
    const run = await succeeded(client, id);
    expect(run.steps.map((step: any) => step.status)).to.deep.equal(['SUCCEEDED', 'SUCCEEDED']);
    expect(run.steps[0].output).to.include({ status: 'completed' });
    expect(Date.parse(run.steps[0].output.woke_at)).to.be.at.least(Date.parse(run.steps[0].output.wake_at) - 1000);
    const types = (await eventsOf(id)).map((e) => (e.type === 'run.status' ? `${e.type}:${e.data.status}` : e.type));
    expect(types).to.include.members(['run.status:WAITING', 'waitpoint.created', 'waitpoint.completed']);
    expect(types.indexOf('waitpoint.created')).to.be.below(types.indexOf('waitpoint.completed'));
  });

  it('run.wait_for by API key: listed while waiting, bad output 422, other workspace 404, twice 409', async () => {
    const { api_key } = await newTenant(100);
    const other = await newTenant(100);
    const client = as(api_key);
    const id = await dispatch(client, [waitFor()]);
    const run = await waiting(client, id);
    const { waitpoint_id, token } = run.steps[0].output;
    expect(token).to.match(/^wpt_/);

    const listed = await client.get('/v1/waitpoints?status=waiting');
    expect(listed.status).to.equal(200);
    const mine = listed.body.waitpoints.find((wp: any) => wp.waitpoint_id === waitpoint_id);
    expect(mine).to.include({ execution_id: id, kind: 'event', name: 'invoice approved', status: 'waiting' });
    expect(JSON.stringify(listed.body)).not.to.include('wpt_');
    expect((await as(other.api_key).get('/v1/waitpoints?status=waiting')).body.waitpoints).to.deep.equal([]);

    const bad = await client.post(`/v1/waitpoints/${waitpoint_id}/complete`, { output: { ok: 'yes' } });
    expect(bad.status).to.equal(422);
    expect(bad.body.detail[0].loc).to.deep.equal(['body', 'output', 'ok']);
    const foreign = await as(other.api_key).post(`/v1/waitpoints/${waitpoint_id}/complete`, { output: { ok: true } });
    expect(foreign.status).to.equal(404);

    const done = await client.post(`/v1/waitpoints/${waitpoint_id}/complete`, { output: { ok: true } });
    expect(done.status, JSON.stringify(done.body)).to.equal(200);
    expect(done.body).to.include({ status: 'completed' });
    const again = await client.post(`/v1/waitpoints/${waitpoint_id}/complete`, { output: { ok: true } });
    expect(again.status).to.equal(409);
    expect(again.body.detail.error).to.equal('waitpoint_not_waiting');

    const ended = await succeeded(client, id);
    expect(ended.steps[0].output).to.include({ status: 'completed', token: null, waitpoint_id });
    expect(ended.steps[0].output.output).to.deep.equal({ ok: true });
    expect(ended.output.output).to.deep.equal({ ok: true });
    expect((await client.get(`/v1/waitpoints?execution_id=${id}`)).body.waitpoints[0]).to.include({
      status: 'completed',
    });
  });

  it('run.wait_for by its own wpt_ token: once; the token is in the events; 409 the second time', async () => {
    const { api_key } = await newTenant(100);
    const client = as(api_key);
    const id = await dispatch(client, [waitFor(), { tool: 'billing.credits_balance', input: {} }]);
    const run = await waiting(client, id);
    const { waitpoint_id, token } = run.steps[0].output;
    const created = (await eventsOf(id)).find((e) => e.type === 'waitpoint.created')!;
    expect(created.data).to.include({ waitpoint_id, token, kind: 'event' });

    // The token completes its own waitpoint only: another id is 404.
    const elsewhere = await as(token).post(`/v1/waitpoints/${id}/complete`, { output: { ok: true } });
    expect(elsewhere.status).to.equal(404);
    const bad = await as(token).post(`/v1/waitpoints/${waitpoint_id}/complete`, { output: {} });
    expect(bad.status).to.equal(422);
    const done = await as(token).post(`/v1/waitpoints/${waitpoint_id}/complete`, { output: { ok: false } });
    expect(done.status, JSON.stringify(done.body)).to.equal(200);
    const again = await as(token).post(`/v1/waitpoints/${waitpoint_id}/complete`, { output: { ok: false } });
    expect(again.status).to.equal(409);
    const forged = await as(`wpt_${'x'.repeat(43)}`).post(`/v1/waitpoints/${waitpoint_id}/complete`, { output: {} });
    expect(forged.status).to.equal(404);

    const ended = await succeeded(client, id);
    expect(ended.steps[0].output).to.include({ token: null, status: 'completed' });
    expect(ended.steps[0].output.output).to.deep.equal({ ok: false });
    const completed = (await eventsOf(id)).filter((e) => e.type === 'waitpoint.completed');
    expect(completed).to.have.length(1);
    expect(completed[0]!.data).to.include({ waitpoint_id, status: 'completed' });
  });

  it('a wait_for nobody completes in time fails its step with waitpoint_timeout', async () => {
    const { api_key } = await newTenant(100);
    const client = as(api_key);
    const id = await dispatch(client, [waitFor({ timeout_seconds: 1 })]);
    const run = await finished(client, id);
    expect(run.status).to.equal('FAILED');
    expect(run.error).to.include({ code: 'waitpoint_timeout', step: 0 });
    expect(run.steps[0]).to.include({ status: 'FAILED' });
    const wp = (await client.get(`/v1/waitpoints?execution_id=${id}`)).body.waitpoints[0];
    expect(wp).to.include({ status: 'timed_out' });
    const late = await client.post(`/v1/waitpoints/${wp.waitpoint_id}/complete`, { output: { ok: true } });
    expect(late.status).to.equal(409);
  });

  it('a cancelled waiting run ends its waitpoint: its token completes nothing', async () => {
    const { api_key } = await newTenant(100);
    const client = as(api_key);
    const id = await dispatch(client, [waitFor()]);
    const { waitpoint_id, token } = (await waiting(client, id)).steps[0].output;
    expect((await client.post(`/v1/runs/${id}/cancel`)).status).to.equal(200);
    expect((await finished(client, id)).status).to.equal('CANCELLED');
    const wp = (await client.get(`/v1/waitpoints?execution_id=${id}`)).body.waitpoints[0];
    expect(wp).to.include({ waitpoint_id, status: 'cancelled' });
    expect((await client.get(`/v1/runs/${id}`)).body.steps[0]).to.include({ status: 'SKIPPED' });
    expect((await client.get(`/v1/runs/${id}`)).body.steps[0].output.token).to.equal(null);
    expect((await as(token).post(`/v1/waitpoints/${waitpoint_id}/complete`, { output: { ok: true } })).status).to.equal(
      409,
    );
  });

  it('runs.wait in a run waits for another run dispatched by REST; outside a run it answers at once', async () => {
    const { api_key, user_jwt } = await newTenant(100);
    const client = as(api_key);
    const awaited = await dispatch(client, [{ tool: 'billing.credits_balance', input: {}, requires_approval: true }]);
    const approval = await pendingApproval(client, awaited);

    const now = await client.post('/v1/cap/runs.wait', { execution_id: awaited });
    expect(now.status).to.equal(200);
    expect(now.body.result).to.include({ execution_id: awaited, status: 'AWAITING_APPROVAL', waitpoint_id: null });

    const waiter = await dispatch(client, [{ tool: 'runs.wait', input: { execution_id: awaited } }]);
    const held = await waiting(client, waiter);
    expect(held.steps[0].output).to.include({ execution_id: awaited, status: 'AWAITING_APPROVAL' });

    const resolved = await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    expect(resolved.status).to.equal(200);
    const ended = await succeeded(client, waiter);
    expect(ended.steps[0].output).to.include({ execution_id: awaited, status: 'SUCCEEDED' });
    expect(ended.steps[0].output.output).to.have.property('balance');

    // A run already finished: the wait is over at once, in the step itself (the run never shows WAITING, and
    // its waitpoint is created and completed); an unknown run is 404; a run cannot await itself.
    const again = await dispatch(client, [{ tool: 'runs.wait', input: { execution_id: awaited } }]);
    expect((await succeeded(client, again)).steps[0].output).to.include({ status: 'SUCCEEDED' });
    const types = (await eventsOf(again)).map((e) => (e.type === 'run.status' ? `${e.type}:${e.data.status}` : e.type));
    expect(types).to.include.members(['waitpoint.created', 'waitpoint.completed', 'step.completed']);
    expect(types).not.to.include('run.status:WAITING');
    const unknown = await client.post('/v1/cap/runs.wait', { execution_id: '00000000-0000-4000-8000-000000000000' });
    expect(unknown.status).to.equal(404);
  });

  it('run.sleep and run.wait_for outside a run: 422 run_only_tool; both are listed in GET /v1/cap', async () => {
    const { api_key } = await newTenant(100);
    const client = as(api_key);
    const slept = await client.post('/v1/cap/run.sleep', { seconds: 5 });
    expect(slept.status).to.equal(422);
    expect(slept.body.detail[0]).to.include({ type: 'run_only_tool' });
    const waited = await client.post('/v1/cap/run.wait_for', { name: 'x', timeout_seconds: 5 });
    expect(waited.status).to.equal(422);
    expect(waited.body.detail[0].type).to.equal('run_only_tool');
    const tooLong = await client.post('/v1/cap/run.sleep', { seconds: 31 * 86_400 });
    expect(tooLong.status).to.equal(422);
    const names = (await client.get('/v1/cap')).body.tools.map((tool: any) => tool.name);
    expect(names).to.include.members(['run.sleep', 'run.wait_for', 'runs.wait']);
  });

  it('MCP lists the three tools; run_sleep over MCP outside a run is refused with run_only_tool', async () => {
    const { api_key } = await newTenant(100);
    const transport = new StreamableHTTPClientTransport(new URL(`${getStack().baseUrl}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${api_key}` } },
    });
    const mcp = new Client({ name: 'weft-test', version: '1.0.0' });
    await mcp.connect(transport);
    try {
      const names = (await mcp.listTools()).tools.map((tool) => tool.name);
      expect(names).to.include.members(['run_sleep', 'run_wait_for', 'runs_wait']);
      const refused = (await mcp.callTool({ name: 'run_sleep', arguments: { seconds: 5 } })) as CallToolResult;
      expect(refused.isError).to.equal(true);
      const error = refused._meta?.['weft/error'] as { status: number; detail: any };
      expect(error.status).to.equal(422);
      expect(error.detail[0].type).to.equal('run_only_tool');
    } finally {
      await mcp.close();
    }
  });
});

describe('runs: a long wait on a waitpoint continues as new (RUN_APPROVAL_RECHECKS_PER_RUN=2)', function () {
  this.timeout(90_000);
  let variant: { stack: Stack; stop: () => Promise<void> };
  before(async function () {
    this.timeout(120_000);
    variant = await bootStack({ RUN_APPROVAL_RECHECK_SECONDS: '1', RUN_APPROVAL_RECHECKS_PER_RUN: '2' });
  });
  after(() => variant?.stop());

  it('a sleep and a wait_for span several runs of the workflow, each history small, and finish once', async () => {
    const { api_key } = await newTenant(100);
    const client = as(api_key, variant.stack.baseUrl);
    const answer = await client.post('/v1/runs', {
      agent: 'playbook',
      input: {
        steps: [
          { tool: 'run.sleep', input: { seconds: 5 } },
          { tool: 'run.wait_for', input: { name: 'later', timeout_seconds: 600 } },
        ],
      },
    });
    const id = answer.body.execution_id as string;
    const handle = variant.stack.runtime.temporal.client.workflow.getHandle(`run-${id}`);
    const seen = new Set<string>();
    const point = await eventually(
      async () => {
        seen.add((await handle.describe()).runId);
        const run = (await client.get(`/v1/runs/${id}`)).body;
        return run.status === 'WAITING' && run.steps[1].output?.token && seen.size >= 3
          ? run.steps[1].output
          : undefined;
      },
      { what: 'the wait_for to wait after the sleep continued as new', timeoutMs: 60_000, intervalMs: 100 },
    );
    for (const runId of [...seen].slice(0, -1)) {
      const earlier = variant.stack.runtime.temporal.client.workflow.getHandle(`run-${id}`, runId);
      expect((await earlier.describe()).status.name).to.equal('CONTINUED_AS_NEW');
      expect(((await earlier.fetchHistory()).events ?? []).length, runId).to.be.at.most(80);
    }
    const done = await as(point.token, variant.stack.baseUrl).post(`/v1/waitpoints/${point.waitpoint_id}/complete`, {
      output: { ok: true },
    });
    expect(done.status).to.equal(200);
    expect(await handle.result()).to.deep.equal({ status: 'SUCCEEDED' });
    const run = (await client.get(`/v1/runs/${id}`)).body;
    expect(run.steps.map((step: any) => step.status)).to.deep.equal(['SUCCEEDED', 'SUCCEEDED']);
    const [{ n }] = await getStack().ownerDataSource.query(
      `SELECT count(*)::int AS n FROM run_events WHERE execution_id = $1 AND type = 'waitpoint.completed'`,
      [id],
    );
    expect(n).to.equal(2);
  });
});
