import { expect } from 'chai';
import {
  clusterPid,
  killClusterProcess,
  movedShards,
  restartClusterProcess,
  shardRanges,
  startClusterProcessAgain,
} from '../helpers/cluster';
import { eventually } from '../helpers/eventually';
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

/**
 * Faults only a multi-process Temporal cluster has (`npm run test:cluster`, on `npm run cluster`'s frontend,
 * two history hosts, two matching hosts and worker): a history host SIGKILLed while runs are mid-step and
 * waiting for approval, so its shards move to the other; a matching host restarted; the frontend restarted.
 * Each scenario runs a load of three-step runs (a third behind an approval) through an API and two workers,
 * and finds every run finished once: nothing lost, doubled, stuck or charged twice.
 */
const RUNS = envNumber('CLUSTER_FAULT_RUNS', 30);
const owner = () => getStack().ownerDataSource;

const countOf = async (sql: string, runs: LoadRun[]) =>
  (await owner().query(sql, [runs.map((run) => run.executionId)]))[0].n as number;
const runningSteps = (runs: LoadRun[]) =>
  countOf(`SELECT count(*)::int AS n FROM run_steps WHERE execution_id = ANY($1::uuid[]) AND status = 'RUNNING'`, runs);
const pendingApprovals = (runs: LoadRun[]) =>
  countOf(
    `SELECT count(*)::int AS n FROM run_approvals WHERE execution_id = ANY($1::uuid[]) AND status = 'pending'`,
    runs,
  );

/**
 * Dispatches RUNS runs; once steps are running and approvals pending, `inject` does its fault (and says what it
 * did); only then do the reviewers answer, so the approvals wait through it. Returns the findings, reported.
 */
async function underLoad(
  fault: ReturnType<typeof faultStackForSuite>,
  inject: (at: { steps: number; approvals: number }) => Promise<string>,
) {
  const { stack, http } = fault;
  const tenants: LoadTenant[] = [];
  for (let i = 0; i < 2; i++) tenants.push(await newLoadTenant(getStack().provisioning, 1000));
  const runs: LoadRun[] = [];
  const started = Date.now();
  const deadline = started + 300_000;
  const dispatching = (async () => {
    for (let i = 0; i < RUNS; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(10, RUNS - i) }, (_, j) =>
          dispatchRun(http, tenants[(i + j) % tenants.length]!, (i + j) % 3 === 0),
        ),
      );
      runs.push(...batch);
    }
  })();
  const at = await eventually(
    async () => {
      const [steps, approvals] = [await runningSteps(runs), await pendingApprovals(runs)];
      return steps > 0 && approvals > 0 ? { steps, approvals } : undefined;
    },
    { what: 'a step running and an approval pending', timeoutMs: 120_000, intervalMs: 20 },
  );
  const injected = await inject(at);
  await dispatching;
  const resolves = await Promise.all(runs.filter((run) => run.approval).map((run) => approve(http, run, deadline)));
  const findings = await inspectRuns(http, owner(), runs, deadline);
  report(`injected: ${injected}`);
  report(
    `found, ${Math.round((Date.now() - started) / 1000)} s after the first dispatch:\n` +
      `${describeFindings(findings, http)}\n${describeExits(stack)}`,
  );
  expect(resolves.map((answer) => answer.status).filter((status) => status !== 200)).to.deep.equal([]);
  expectNothingLostOrDoubled(findings, http);
}

describe('cluster: faults of a multi-process Temporal cluster under a load of runs', function () {
  this.timeout(600_000);
  const fault = faultStackForSuite(2);

  it('a history host SIGKILLed mid-step with approvals pending: its shards move, every run finishes once', async () => {
    let killedAt = 0;
    try {
      await underLoad(fault, async ({ steps, approvals }) => {
        const before = await shardRanges();
        const pid = await killClusterProcess('history-2');
        killedAt = Date.now();
        const moved = await eventually(async () => movedShards(before, await shardRanges()).length || undefined, {
          what: "history-2's shards to move to history-1",
          timeoutMs: 120_000,
          intervalMs: 250,
        });
        const seconds = ((Date.now() - killedAt) / 1000).toFixed(1);
        return (
          `SIGKILL history-2 (pid ${pid}) with ${steps} step(s) running and ${approvals} approval(s) pending; ` +
          `${moved} of ${before.size} shards taken over by history-1 within ${seconds} s`
        );
      });
    } finally {
      // A supervisor starts the host again; its shards come back to it (the cluster is whole for what follows).
      if (!clusterPid('history-2')) {
        const before = await shardRanges();
        await startClusterProcessAgain('history-2');
        const moved = await eventually(async () => movedShards(before, await shardRanges()).length || undefined, {
          what: 'shards to rebalance onto the restarted history-2',
          timeoutMs: 120_000,
          intervalMs: 250,
        });
        const after = Math.round((Date.now() - killedAt) / 1000);
        report(`history-2 started again ${after} s after the kill: ${moved} shards rebalanced to it`);
      }
    }
  });

  /** Restarts `name` (SIGTERM, then a new process) once steps run and approvals wait. */
  const restartUnderLoad = (name: string) =>
    underLoad(fault, async ({ steps, approvals }) => {
      const began = Date.now();
      const { stopped, started } = await restartClusterProcess(name);
      const seconds = ((Date.now() - began) / 1000).toFixed(1);
      return (
        `${name} restarted (SIGTERM pid ${stopped}, new pid ${started}, ${seconds} s) ` +
        `with ${steps} step(s) running and ${approvals} approval(s) pending`
      );
    });

  it('a matching host restarted mid-load: its task-queue partitions move, every run finishes once', async () => {
    await restartUnderLoad('matching-1');
  });

  it('the frontend restarted mid-load: the API and workers reconnect, every run finishes once', async () => {
    await restartUnderLoad('frontend');
  });

  // Whatever a scenario left stopped is started again, as a supervisor would: the suite's clean-up needs it.
  afterEach(async () => {
    for (const name of ['frontend', 'matching-1', 'history-2'])
      if (!clusterPid(name)) await startClusterProcessAgain(name);
  });
});
