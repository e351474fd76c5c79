import { expect } from 'chai';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { finished } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

type Client = ReturnType<typeof as>;

const read = (client: Client, id: string) => client.get(`/v1/runs/${id}`).then((answer) => answer.body);

/** A run held open by an approval on its second step, once its first step has run. */
async function waitingRun(client: Client): Promise<{ id: string; approvalId: string }> {
  const dispatched = await client.post('/v1/runs', {
    agent: 'playbook',
    input: {
      steps: [{ tool: 'billing.credits_balance' }, { tool: 'billing.credits_balance', requires_approval: true }],
    },
  });
  const id = dispatched.body.execution_id;
  const run = await eventually(
    async () => {
      const body = await read(client, id);
      return body.approvals.length > 0 && body;
    },
    { what: 'the run to await approval' },
  );
  return { id, approvalId: run.approvals[0].approval_id };
}

describe('runs: decisions (agent.record_decision, agent.read_decisions)', () => {
  it('appends DECISION steps with revision lineage, reads them back, and writes run.decision_recorded', async () => {
    const { api_key, user_jwt, workspace_id } = await newTenant();
    const client = as(api_key);
    const { id, approvalId } = await waitingRun(client);
    const first = await client.post('/v1/cap/agent.record_decision', { execution_id: id, decision: 'use plan A' });
    expect(first.status).to.equal(200);
    const firstStep = first.body.result.step_id;
    const revised = await client.post('/v1/cap/agent.record_decision', {
      execution_id: id,
      decision: 'use plan B',
      rationale: 'A is too slow',
      supersedes_step_id: firstStep,
    });
    expect(revised.status).to.equal(200);
    expect(revised.body.result.supersedes_step_id).to.equal(firstStep);

    const again = await client.post('/v1/cap/agent.record_decision', {
      execution_id: id,
      decision: 'use plan C',
      supersedes_step_id: firstStep,
    });
    expect(again.status).to.equal(409);
    const notADecision = (await read(client, id)).steps[0].step_id;
    const wrong = await client.post('/v1/cap/agent.record_decision', {
      execution_id: id,
      decision: 'x',
      supersedes_step_id: notADecision,
    });
    expect(wrong.status).to.equal(404);

    const all = await client.post('/v1/cap/agent.read_decisions', { execution_id: id });
    expect(all.body.result.decisions.map((d: any) => [d.decision, d.superseded])).to.deep.equal([
      ['use plan A', true],
      ['use plan B', false],
    ]);
    const heads = await client.post('/v1/cap/agent.read_decisions', { execution_id: id, head_only: true });
    expect(heads.body.result.decisions).to.have.length(1);
    expect(heads.body.result.decisions[0]).to.include({ decision: 'use plan B', rationale: 'A is too slow' });
    const run = await read(client, id);
    expect(run.steps.filter((step: any) => step.kind === 'DECISION')).to.have.length(2);

    const events = await getStack().ownerDataSource.query(
      `SELECT count(*)::int AS n FROM outbox WHERE workspace_id = $1 AND event_type = 'run.decision_recorded'`,
      [workspace_id],
    );
    expect(events[0].n).to.equal(2);

    await as(user_jwt).post(`/v1/approvals/${approvalId}/resolve`, { decision: 'APPROVED' });
    await finished(client, id);
    const late = await client.post('/v1/cap/agent.record_decision', { execution_id: id, decision: 'too late' });
    expect(late.status).to.equal(409);
  });

  it('lets one of ten concurrent decisions supersede a head; the rest are 409 step_superseded (L-10)', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const { id } = await waitingRun(client);
    const head = await client.post('/v1/cap/agent.record_decision', { execution_id: id, decision: 'plan A' });
    // The run's row is held here until all ten are inside their transactions, so they overlap for sure.
    const holder = getStack().ownerDataSource.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    let pending: Promise<any[]>;
    try {
      await holder.query(`SELECT 1 FROM run_executions WHERE id = $1 FOR NO KEY UPDATE`, [id]);
      pending = Promise.all(
        Array.from({ length: 10 }, (_, at) =>
          client.post('/v1/cap/agent.record_decision', {
            execution_id: id,
            decision: `plan B${at}`,
            supersedes_step_id: head.body.result.step_id,
          }),
        ),
      );
      await eventually(
        async () =>
          (await holder.query(`SELECT count(DISTINCT pid)::int AS n FROM pg_locks WHERE NOT granted`))[0].n >= 10,
        { what: 'ten decisions waiting on a lock' },
      );
    } finally {
      await holder.commitTransaction();
      await holder.release();
    }
    const answers = await pending;
    expect(answers.map((answer) => answer.status).sort()).to.deep.equal([200, ...Array(9).fill(409)]);
    expect(answers.filter((answer) => answer.status === 409).map((answer) => answer.body.detail.error)).to.deep.equal(
      Array(9).fill('step_superseded'),
    );
    const heads = await client.post('/v1/cap/agent.read_decisions', { execution_id: id, head_only: true });
    expect(heads.body.result.decisions).to.have.length(1);
    await client.post(`/v1/runs/${id}/cancel`);
  });

  it('is 404 for another workspace’s run', async () => {
    const victim = await newTenant();
    const attacker = await newTenant();
    const { id } = await waitingRun(as(victim.api_key));
    const thief = as(attacker.api_key);
    expect((await thief.post('/v1/cap/agent.record_decision', { execution_id: id, decision: 'mine' })).status).to.equal(
      404,
    );
    expect((await thief.post('/v1/cap/agent.read_decisions', { execution_id: id })).status).to.equal(404);
    expect((await thief.get(`/v1/runs/${id}/audit`)).status).to.equal(404);
    await as(victim.api_key).post(`/v1/runs/${id}/cancel`);
  });
});

describe('runs: the hash-chained audit trail (contract 6)', () => {
  it('chains tool steps, approvals and decisions, and shows where a row was altered', async () => {
    const { api_key, user_jwt } = await newTenant();
    const client = as(api_key);
    const { id, approvalId } = await waitingRun(client);
    await client.post('/v1/cap/agent.record_decision', { execution_id: id, decision: 'go ahead' });
    await as(user_jwt).post(`/v1/approvals/${approvalId}/resolve`, { decision: 'APPROVED' });
    await finished(client, id);

    const audit = await client.get(`/v1/runs/${id}/audit`);
    expect(audit.status).to.equal(200);
    expect(audit.body).to.include({ valid: true, length: 4, first_invalid_seq: null });
    expect(audit.body.steps.map((link: any) => link.kind)).to.deep.equal(['TOOL', 'DECISION', 'APPROVAL', 'TOOL']);
    expect(audit.body.steps[0].prev_hash).to.equal('0'.repeat(64));
    expect(audit.body.steps[1].prev_hash).to.equal(audit.body.steps[0].hash);
    expect(audit.body.head_hash).to.equal(audit.body.steps[3].hash);

    await getStack().ownerDataSource.query(
      `UPDATE run_steps SET output = '{"balance": 1000000, "locked": false}' WHERE id = $1`,
      [audit.body.steps[0].ref_id],
    );
    const tampered = await client.get(`/v1/runs/${id}/audit`);
    expect(tampered.body).to.include({ valid: false, first_invalid_seq: 0, length: 4 });
  });
});
