import { expect } from 'chai';
import { eventually, sleep } from '../helpers/eventually';
import type { LoadRun, LoadTenant } from '../helpers/fault-runs';
import {
  approve,
  describeFindings,
  dispatchRun,
  expectNothingLostOrDoubled,
  inspectRuns,
  newLoadTenant,
} from '../helpers/fault-runs';
import { describeExits, envNumber, report } from '../helpers/fault-stack';
import { faultStackForSuite } from '../helpers/fault-suite';
import { getStack } from '../helpers/stack';

// The load is a few hundred runs (FAULT_KILL_RUNS=300); CI's default keeps the tier short.
const RUNS = envNumber('FAULT_KILL_RUNS', 100);
const KILLS = 3;

const owner = () => getStack().ownerDataSource;

/** Steps of `runs` now RUNNING (begun, not recorded): a kill now lands mid-step. */
const runningSteps = async (runs: LoadRun[]) =>
  (
    await owner().query(
      `SELECT count(*)::int AS n FROM run_steps WHERE execution_id = ANY($1::uuid[]) AND status = 'RUNNING'`,
      [runs.map((run) => run.executionId)],
    )
  )[0].n as number;

const TITLE = `fault: one of two workers SIGKILLed mid-step ${KILLS} times over ${RUNS} runs, a third with approvals`;

describe(TITLE, function () {
  this.timeout(600_000);
  const fault = faultStackForSuite(2);

  it('each step has its side effect once and is charged once; every audit chain is valid', async () => {
    const { stack, http } = fault;
    const tenants: LoadTenant[] = [];
    for (let i = 0; i < 4; i++) tenants.push(await newLoadTenant(getStack().provisioning, 1000));
    const runs: LoadRun[] = [];
    const approvals: Promise<unknown>[] = [];
    const deadline = Date.now() + 420_000;
    const dispatching = (async () => {
      for (let i = 0; i < RUNS; i += 10) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(10, RUNS - i) }, (_, j) =>
            dispatchRun(http, tenants[(i + j) % tenants.length]!, (i + j) % 3 === 0),
          ),
        );
        runs.push(...batch);
        // Reviewers answer as the approvals appear, while the load goes on.
        for (const run of batch.filter((run) => run.approval)) approvals.push(approve(http, run, deadline));
      }
    })();

    const kills: string[] = [];
    for (let kill = 0; kill < KILLS; kill++) {
      const inFlight = await eventually(async () => (await runningSteps(runs)) || undefined, {
        what: 'a step to be running',
        timeoutMs: 120_000,
        intervalMs: 10,
      });
      await stack.replaceWorker(0);
      kills.push(`kill ${kill + 1}: ${inFlight} step(s) running, ${runs.length} runs dispatched`);
      // Let the survivor and the replacement take the load for a while before the next kill.
      await sleep(5_000);
    }
    report(`injected: worker SIGKILLs —\n${kills.join('\n')}`);
    await dispatching;
    const resolves = await Promise.all(approvals);
    const findings = await inspectRuns(http, owner(), runs, deadline);
    report(`found:\n${describeFindings(findings, http)}\n${describeExits(stack)}`);

    expect(kills).to.have.length(KILLS);
    expect(resolves.map((answer: any) => answer.status).filter((status) => status !== 200)).to.deep.equal([]);
    expectNothingLostOrDoubled(findings, http);
  });
});

describe('fault: the API SIGKILLed right after committing a resolve, before its signal left', function () {
  this.timeout(300_000);
  const fault = faultStackForSuite();

  it('the run still resumes and finishes', async () => {
    const { stack, http } = fault;
    const tenant = await newLoadTenant(getStack().provisioning, 100);
    const run = await dispatchRun(http, tenant, true);
    const approvalId = await eventually(
      async () => {
        const read = await http.send(tenant.owner.api_key, 'GET', `/v1/runs/${run.executionId}`);
        return read.body?.approvals?.find((approval: any) => approval.status === 'pending')?.approval_id as string;
      },
      { what: 'the approval to be pending', timeoutMs: 60_000, intervalMs: 200 },
    );

    // The API's calls to Temporal hang: the resolve commits, then waits on its signal.
    await stack.apiTemporal.inject('stall');
    const resolving = http.send(tenant.reviewer.user_jwt, 'POST', `/v1/approvals/${approvalId}/resolve`, {
      decision: 'APPROVED',
    });
    await eventually(
      async () =>
        (await owner().query(`SELECT status FROM run_approvals WHERE id = $1`, [approvalId]))[0]?.status === 'approved',
      { what: 'the resolve to commit', timeoutMs: 30_000, intervalMs: 20 },
    );
    await stack.api.kill();
    const killedAt = Date.now();
    const answer = await resolving;
    await stack.apiTemporal.heal();
    await stack.replaceApi();
    http.baseUrl = stack.api.baseUrl;
    report(
      `injected: API SIGKILL after the approval committed, its signal stalled (client saw status ${answer.status})`,
    );

    const findings = await inspectRuns(http, owner(), [run], Date.now() + 120_000);
    report(
      `found, ${Math.round((Date.now() - killedAt) / 1000)} s after the kill:\n${describeFindings(findings, http)}`,
    );
    expect(findings.notSucceeded, 'runs not SUCCEEDED').to.deep.equal([]);
    expect(findings.stepsDoubled, 'side effects doubled').to.deep.equal([]);
    expect(findings.stepsMissing, 'side effects missing').to.deep.equal([]);
    expect(findings.chargeErrors, 'charges doubled or missing').to.deep.equal([]);
    expect(findings.invalidChains, 'invalid audit chains').to.deep.equal([]);
  });
});
