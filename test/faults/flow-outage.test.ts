import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { eventually, sleep } from '../helpers/eventually';
import { newLoadTenant } from '../helpers/fault-runs';
import { describeExits, report } from '../helpers/fault-stack';
import { faultStackForSuite } from '../helpers/fault-suite';
import { getStack } from '../helpers/stack';

// Issue 43 item 2: throttled and debounced runs held while Postgres is unreachable (FAULT_PG_OUTAGE_SECONDS,
// default 60) all start once it is back: their timers' activities retry, nothing held is lost or doubled.
const SECONDS = Number((process.env.FAULT_PG_OUTAGE_SECONDS ?? '60').split(',')[0]) || 60;

const quick = (tag: string, flow: Record<string, unknown>, params: Record<string, unknown>) => ({
  agent: 'playbook',
  input: { steps: [{ tool: 'agent.start_session', input: { name: tag } }], params },
  flow,
});

describe(`fault: Postgres unreachable for ${SECONDS} s while runs are throttled and debounced`, function () {
  this.timeout((SECONDS + 300) * 1000);
  const fault = faultStackForSuite();

  it('every held run starts once after the heal, throttled ones in order and within their limit', async () => {
    const { stack, http } = fault;
    const tenant = await newLoadTenant(getStack().provisioning, 0);
    const key = tenant.owner.api_key;
    const tag = `flow-${randomUUID().slice(0, 8)}`;
    const period = 5;
    const throttled: string[] = [];
    for (let i = 0; i < 6; i++) {
      const answer = await http.retrying(
        key,
        'POST',
        '/v1/runs',
        quick(`${tag}-t${i}`, { throttle: { key: tag, limit: 2, period_seconds: period } }, { i }),
      );
      expect(answer.status, JSON.stringify(answer.body)).to.equal(202);
      throttled.push(answer.body.execution_id);
    }
    let debounced = '';
    for (let n = 0; n < 3; n++) {
      const answer = await http.retrying(
        key,
        'POST',
        '/v1/runs',
        quick(`${tag}-d`, { debounce: { key: tag, period_seconds: period } }, { n }),
      );
      debounced = answer.body.execution_id;
    }
    await stack.postgres.inject('cut');
    report(`injected: Postgres cut for ${SECONDS} s with 4 throttled and 1 debounced run held`);
    await sleep(SECONDS * 1000);
    await stack.postgres.heal();
    const healedAt = Date.now();

    const owner = getStack().ownerDataSource;
    const ids = [...throttled, debounced];
    await eventually(
      async () => {
        const [{ n }] = await owner.query(
          `SELECT count(*)::int AS n FROM run_executions WHERE id = ANY($1) AND status = 'SUCCEEDED'`,
          [ids],
        );
        return n === ids.length;
      },
      { what: 'every held run to succeed after the heal', timeoutMs: 180_000, intervalMs: 500 },
    );
    report(
      `all ${ids.length} succeeded ${Math.round((Date.now() - healedAt) / 1000)} s after the heal\n` +
        describeExits(stack),
    );
    // One session per run (nothing doubled), the debounced one with its last input.
    const sessions = await owner.query(
      `SELECT name, count(*)::int AS n FROM agent_sessions WHERE workspace_id = $1 GROUP BY name`,
      [tenant.owner.workspace_id],
    );
    expect(sessions.every((row: { n: number }) => row.n === 1)).to.equal(true);
    expect(sessions).to.have.length(7);
    const [run] = await owner.query(`SELECT input FROM run_executions WHERE id = $1`, [debounced]);
    expect(run.input.params).to.deep.equal({ n: 2 });
    const starts = (await owner.query(
      `SELECT DISTINCT ON (execution_id) execution_id, created_at, seq FROM run_events
        WHERE execution_id = ANY($1) AND type = 'run.status' AND data->>'status' = 'QUEUED'
          AND data->>'queued_reason' IS NULL
        ORDER BY execution_id, seq`,
      [throttled],
    )) as { execution_id: string; created_at: Date; seq: string }[];
    starts.sort((a, b) => Number(a.seq) - Number(b.seq));
    expect(starts.map((s) => s.execution_id)).to.deep.equal(throttled);
    const at = starts.map((s) => s.created_at.getTime());
    for (let i = 0; i + 2 < at.length; i++) expect(at[i + 2]! - at[i]!).to.be.at.least(period * 1000);
    expect(http.forbidden5xx(), 'no 5xx but a 503 with Retry-After').to.deep.equal([]);
  });
});
