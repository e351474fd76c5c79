import { expect } from 'chai';
import { eventually, sleep } from '../helpers/eventually';
import type { FaultHttp, LoadRun, LoadTenant } from '../helpers/fault-runs';
import {
  approve,
  describeFindings,
  dispatchRun,
  expectNothingLostOrDoubled,
  inspectRuns,
  newLoadTenant,
} from '../helpers/fault-runs';
import { describeExits, report } from '../helpers/fault-stack';
import { faultStackForSuite } from '../helpers/fault-suite';
import { getStack } from '../helpers/stack';

// FAULT_PG_OUTAGE_SECONDS: one outage per comma-separated length; the default is the shortest that
// outlasts the old retry budget of the run's database steps (about 45 s). The issue's: `60,300`.
const OUTAGES = (process.env.FAULT_PG_OUTAGE_SECONDS ?? '60')
  .split(',')
  .map(Number)
  .filter((seconds) => seconds > 0);

const pendingApproval = async (http: FaultHttp, run: LoadRun) => {
  for (;;) {
    const read = await http.retrying(run.tenant.owner.api_key, 'GET', `/v1/runs/${run.executionId}`);
    const pending = read.body.approvals?.find((approval: any) => approval.status === 'pending');
    if (read.body.status === 'AWAITING_APPROVAL' && pending) return pending.approval_id as string;
    await sleep(200);
  }
};

const statuses = async (runs: LoadRun[]) =>
  (
    await getStack().ownerDataSource.query(
      `SELECT status, count(*)::int AS n FROM run_executions WHERE id = ANY($1::uuid[]) GROUP BY status`,
      [runs.map((run) => run.executionId)],
    )
  )
    .map((row: { status: string; n: number }) => `${row.status}: ${row.n}`)
    .join(', ');

for (const seconds of OUTAGES) {
  describe(`fault: Postgres unreachable for ${seconds} s (API and worker reach it through a cut proxy)`, function () {
    this.timeout((seconds + 300) * 1000);
    const fault = faultStackForSuite();

    it('runs mid-step and runs awaiting approval all finish once it is back; a resolve meanwhile: 503', async () => {
      const { stack, http } = fault;
      const tenants: LoadTenant[] = [];
      for (let i = 0; i < 2; i++) tenants.push(await newLoadTenant(getStack().provisioning, 100));
      const waiting: LoadRun[] = [];
      for (let i = 0; i < 4; i++) waiting.push(await dispatchRun(http, tenants[i % 2]!, true));
      const approvals = await Promise.all(waiting.map((run) => pendingApproval(http, run)));
      const running = await Promise.all(Array.from({ length: 6 }, (_, i) => dispatchRun(http, tenants[i % 2]!, false)));

      // Cut as soon as a run has begun its steps, so that runs are mid-way rather than still queued.
      await eventually(async () => (await statuses(running)).includes('RUNNING'), {
        what: 'a run to start its steps',
        timeoutMs: 60_000,
        intervalMs: 10,
      });
      await stack.postgres.inject('cut');
      const cutAt = Date.now();
      report(`injected: Postgres cut for ${seconds} s; at the cut: ${await statuses([...waiting, ...running])}`);

      // Half-way through, a reviewer resolves: the API cannot commit it, and must say so retryably.
      await sleep((seconds * 1000) / 2);
      const during = await http.send(
        waiting[0]!.tenant.reviewer.user_jwt,
        'POST',
        `/v1/approvals/${approvals[0]}/resolve`,
        {
          decision: 'APPROVED',
        },
      );
      const read = await http.send(running[0]!.tenant.owner.api_key, 'GET', `/v1/runs/${running[0]!.executionId}`);
      report(
        `during the outage: resolve answered ${during.status} (Retry-After ${during.retryAfter}), ` +
          `a run read answered ${read.status} (Retry-After ${read.retryAfter})`,
      );
      await sleep(Math.max(0, cutAt + seconds * 1000 - Date.now()));
      await stack.postgres.heal();
      const healedAt = Date.now();
      report(`healed; at the heal: ${await statuses([...waiting, ...running])}`);

      const retried = await http.retrying(
        waiting[0]!.tenant.reviewer.user_jwt,
        'POST',
        `/v1/approvals/${approvals[0]}/resolve`,
        {
          decision: 'APPROVED',
        },
      );
      const deadline = Date.now() + 180_000;
      const others = await Promise.all(waiting.slice(1).map((run) => approve(http, run, deadline)));
      const findings = await inspectRuns(http, getStack().ownerDataSource, [...waiting, ...running], deadline);
      report(
        `found, ${Math.round((Date.now() - healedAt) / 1000)} s after the heal:\n` +
          `${describeFindings(findings, http)}\n${describeExits(stack)}`,
      );

      expect(during.status, 'a resolve during the outage').to.equal(503);
      expect(during.retryAfter, 'its Retry-After').to.be.a('string');
      expect(read.status, 'a read during the outage').to.equal(503);
      expect(retried.status, 'the resolve retried after the outage').to.equal(200);
      expect(others.map((answer) => answer.status)).to.deep.equal([200, 200, 200]);
      expectNothingLostOrDoubled(findings, http);
    });
  });
}
