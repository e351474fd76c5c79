import { expect } from 'chai';
import { LIMITS } from '../src/rules/limits';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { bootStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

const oneStep = (priority?: number) => ({
  agent: 'playbook',
  input: { steps: [{ tool: 'billing.credits_balance' }] },
  ...(priority ? { flow: { priority } } : {}),
});

// Issue 43 item 2: `flow.priority` orders a workspace's runs among themselves, at Weft's gate: at most
// LIMITS.runs.priority.inFlight of them wait in Temporal's queue, the rest are held QUEUED
// (`queued_reason: priority`) and let go by priority as those begin, are cancelled or finish.
describe('runs: priority within the workspace, at its gate (issue 43 item 2)', function () {
  this.timeout(120_000);
  let booted: Awaited<ReturnType<typeof bootStack>>;
  before(async function () {
    this.timeout(60_000);
    // No worker at first: a started run waits in the task queue, in flight, until the test starts one.
    booted = await bootStack({}, { worker: false });
  });
  after(async function () {
    this.timeout(60_000);
    await booted?.stop();
  });

  const workflowExists = async (executionId: string) => {
    try {
      await booted.stack.runtime.temporal.client.workflow.getHandle(`run-${executionId}`).describe();
      return true;
    } catch {
      return false;
    }
  };

  it('holds runs past the cap; a cancel lets the first by priority go; once runs begin, none is left', async () => {
    const tenant = await newTenant(1000);
    const client = as(tenant.api_key, booted.stack.baseUrl);
    const dispatch = async (priority?: number) => {
      const answer = await client.post('/v1/runs', oneStep(priority));
      expect(answer.status, answer.text).to.equal(202);
      return answer.body;
    };
    const reasons = async (ids: string[]) =>
      Promise.all(ids.map(async (id) => (await client.get(`/v1/runs/${id}`)).body.queued_reason));

    const inFlight: string[] = [];
    for (let at = 0; at < LIMITS.runs.priority.inFlight; at++) {
      const run = await dispatch();
      expect(run.queued_reason, `run ${at}`).to.equal(null);
      inFlight.push(run.execution_id);
    }
    // Past the cap, runs are held QUEUED without a workflow: two of priority 5, then two of priority 1.
    const held: string[] = [];
    for (const priority of [5, 5, 1, 1]) {
      const run = await dispatch(priority);
      expect(run).to.include({ status: 'QUEUED', queued_reason: 'priority' });
      held.push(run.execution_id);
    }
    const [low, lower, high, higher] = held as [string, string, string, string];
    expect((await client.get(`/v1/runs/${high}`)).body.flow).to.include({ priority: 1 });
    expect(await workflowExists(high)).to.equal(false);

    // A run in flight cancelled makes room for one: the first priority-1 run, ahead of the earlier priority-5 ones.
    expect((await client.post(`/v1/runs/${inFlight[0]}/cancel`)).status).to.equal(200);
    expect(await reasons(held)).to.deep.equal(['priority', 'priority', null, 'priority']);
    await eventually(() => workflowExists(high), { what: 'the released run to get its workflow' });
    // A held run cancelled frees no room: the others stay held.
    expect((await client.post(`/v1/runs/${lower}/cancel`)).status).to.equal(200);
    expect(await reasons([low, higher])).to.deep.equal(['priority', 'priority']);

    // Once a worker polls, each run that begins lets the next go: every run of the workspace finishes.
    await booted.startWorker();
    const left = [...inFlight.slice(1), low, high, higher];
    const statuses = await eventually(
      async () => {
        const rows: { status: string }[] = await booted.stack.ownerDataSource.query(
          `SELECT status FROM run_executions WHERE id = ANY($1)`,
          [left],
        );
        return rows.every((row) => row.status === 'SUCCEEDED') ? rows : undefined;
      },
      { what: 'every run to succeed', timeoutMs: 60_000 },
    );
    expect(statuses).to.have.length(left.length);
    const [{ n }] = await booted.stack.ownerDataSource.query(
      `SELECT count(*)::int AS n FROM run_executions WHERE workspace_id = $1 AND status = 'QUEUED'`,
      [tenant.workspace_id],
    );
    expect(n, 'runs left QUEUED').to.equal(0);
  });
});
