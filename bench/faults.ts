/**
 * `npm run bench -- faults [--runs 300] [--postgres-seconds 60] [--temporal-seconds 60] [--kills 3]`
 *
 * The fault tier's load, in one session, for the figures in docs/fault-tier.md (not a test): one
 * API and two worker processes reaching Postgres and a private Temporal server through fault
 * proxies (test/helpers/fault-stack.ts), `--runs` runs (a third with approvals, one in ten of the
 * others through a webhook) dispatched while, in turn:
 * 1. one worker is SIGKILLed mid-step `--kills` times (and replaced);
 * 2. the API is SIGKILLed right after committing a resolve, before its signal left;
 * 3. Postgres is cut for `--postgres-seconds`;
 * 4. Temporal is cut for `--temporal-seconds`.
 * A reviewer resolves every approval as it appears. Printed: runs lost, steps doubled, charges
 * doubled or missing, invalid audit chains, 5xx answered (only a 503 with Retry-After allowed), and
 * the time from the end of the last fault until every run was terminal. Data goes into weft_bench.
 */

import type { LoadRun, LoadTenant } from '../test/helpers/fault-runs';
import {
  createTrigger,
  deliverWebhook,
  describeFindings,
  dispatchRun,
  FaultHttp,
  inspectRuns,
  newLoadTenant,
} from '../test/helpers/fault-runs';
import { startFaultStack } from '../test/helpers/fault-stack';
import { numberOption } from './lib/measure';
import { bootBenchService } from './lib/servers';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const log = (line: string) => console.log(`[faults ${new Date().toISOString().slice(11, 19)}] ${line}`);

export async function run(args: string[]): Promise<void> {
  const runs = numberOption(args, 'runs', 300);
  const postgresSeconds = numberOption(args, 'postgres-seconds', 60);
  const temporalSeconds = numberOption(args, 'temporal-seconds', 60);
  const kills = numberOption(args, 'kills', 3);

  const service = await bootBenchService();
  const stack = await startFaultStack({
    databaseUrl: service.config.DATABASE_URL,
    databaseOwnerUrl: service.config.DATABASE_OWNER_URL,
    temporalAddress: service.config.TEMPORAL_ADDRESS,
    temporalClient: service.runtime.temporal.client,
    workers: 2,
    queuePrefix: 'weft-bench-faults-',
  });
  const http = new FaultHttp(stack.api.baseUrl);
  const owner = service.owner;
  const started = Date.now();
  try {
    const tenants: LoadTenant[] = [];
    for (let i = 0; i < 6; i++) {
      const tenant = await newLoadTenant(service.provisioning, 100_000);
      await createTrigger(http, tenant);
      tenants.push(tenant);
    }

    // The load: a steady stream of dispatches for as long as the faults last, then the rest at once.
    const dispatched: LoadRun[] = [];
    let faultsOver = false;
    let duringFaults = 0;
    let slowest = 0;
    const dispatcher = (async () => {
      for (let i = 0; i < runs; i++) {
        const tenant = tenants[i % tenants.length]!;
        const approval = i % 3 === 0;
        const sent = Date.now();
        try {
          dispatched.push(
            !approval && i % 10 === 1 ? await deliverWebhook(http, tenant) : await dispatchRun(http, tenant, approval),
          );
          slowest = Math.max(slowest, Date.now() - sent);
          if (!faultsOver) duringFaults++;
        } catch (error) {
          log(`dispatch ${i} refused: ${String(error)}`);
        }
        if (!faultsOver) await sleep(400);
      }
    })();

    // The reviewer: one request at a time, resolving whatever waits.
    const resolved = new Set<string>();
    const resolveStatuses: number[] = [];
    let reviewing = true;
    const reviewer = (async () => {
      while (reviewing) {
        for (const load of dispatched.filter((item) => item.approval && !resolved.has(item.executionId))) {
          const read = await http.send(load.tenant.owner.api_key, 'GET', `/v1/runs/${load.executionId}`);
          const pending = read.body?.approvals?.find((approval: any) => approval.status === 'pending');
          if (read.status !== 200 || read.body.status !== 'AWAITING_APPROVAL' || !pending) continue;
          const answer = await http.send(
            load.tenant.reviewer.user_jwt,
            'POST',
            `/v1/approvals/${pending.approval_id}/resolve`,
            {
              decision: 'APPROVED',
            },
          );
          if (answer.status === 200 || answer.status === 409) resolved.add(load.executionId);
          resolveStatuses.push(answer.status);
        }
        await sleep(1000);
      }
    })();

    const runningSteps = async () =>
      (
        await owner.query(
          `SELECT count(*)::int AS n FROM run_steps WHERE execution_id = ANY($1::uuid[]) AND status = 'RUNNING'`,
          [dispatched.map((item) => item.executionId)],
        )
      )[0].n as number;

    await sleep(10_000);
    for (let kill = 1; kill <= kills; kill++) {
      let inFlight = 0;
      for (let tries = 0; tries < 3000 && !inFlight; tries++) {
        inFlight = await runningSteps();
        if (!inFlight) await sleep(10);
      }
      await stack.replaceWorker(0);
      log(`fault: worker SIGKILL ${kill}/${kills} with ${inFlight} step(s) running`);
      await sleep(8_000);
    }

    // The API killed between a resolve's commit and its signal: its Temporal calls stall meanwhile.
    const victim = await dispatchRun(http, tenants[0]!, true);
    dispatched.push(victim);
    resolved.add(victim.executionId);
    let approvalId: string | undefined;
    while (!approvalId) {
      const read = await http.send(victim.tenant.owner.api_key, 'GET', `/v1/runs/${victim.executionId}`);
      approvalId = read.body?.approvals?.find((approval: any) => approval.status === 'pending')?.approval_id;
      if (!approvalId) await sleep(200);
    }
    await stack.apiTemporal.inject('stall');
    const resolving = http.send(victim.tenant.reviewer.user_jwt, 'POST', `/v1/approvals/${approvalId}/resolve`, {
      decision: 'APPROVED',
    });
    for (;;) {
      const [row] = await owner.query(`SELECT status FROM run_approvals WHERE id = $1`, [approvalId]);
      if (row?.status === 'approved') break;
      await sleep(20);
    }
    await stack.api.kill();
    await resolving;
    await stack.apiTemporal.heal();
    await stack.replaceApi();
    http.baseUrl = stack.api.baseUrl;
    log('fault: API SIGKILL after a committed resolve; API replaced');

    await sleep(5_000);
    log(`fault: Postgres cut for ${postgresSeconds} s`);
    await stack.postgres.outage('cut', postgresSeconds * 1000);
    await sleep(10_000);
    log(`fault: Temporal cut for ${temporalSeconds} s`);
    await Promise.all([
      stack.temporal.outage('cut', temporalSeconds * 1000),
      stack.apiTemporal.outage('cut', temporalSeconds * 1000),
    ]);
    const lastFaultEnded = Date.now();
    faultsOver = true;
    log('faults over; waiting for the rest of the load and for every run to finish');

    await dispatcher;
    const findings = await inspectRuns(http, owner, dispatched, Date.now() + 20 * 60_000);
    const allTerminal = Date.now();
    reviewing = false;
    await reviewer;

    const lost = findings.notSucceeded.length;
    console.log('');
    console.log(describeFindings(findings, http));
    for (const exit of stack.exits) console.log(exit.slice(0, 200));
    console.log('');
    console.log('| figure | value |');
    console.log('| --- | --- |');
    console.log(`| runs dispatched (202) | ${dispatched.length} of ${runs + 1} |`);
    console.log(`| with approvals | ${dispatched.filter((item) => item.approval).length} |`);
    console.log(`| through a webhook | ${dispatched.filter((item) => item.via === 'webhook').length} |`);
    console.log(`| dispatched before the last fault ended | ${duringFaults + 1} |`);
    console.log(`| slowest dispatch answer (202, retries included) | ${(slowest / 1000).toFixed(1)} s |`);
    console.log(`| runs lost (not SUCCEEDED) | ${lost} |`);
    console.log(`| steps doubled | ${findings.stepsDoubled.length} |`);
    console.log(`| side effects missing | ${findings.stepsMissing.length} |`);
    console.log(`| charges doubled or missing (tenants off) | ${findings.chargeErrors.length} |`);
    console.log(`| invalid audit chains | ${findings.invalidChains.length} |`);
    console.log(`| 5xx answered | ${http.fiveHundreds.length} |`);
    console.log(`| 5xx other than 503 with Retry-After | ${http.forbidden5xx().length} |`);
    console.log(`| requests to an unreachable API (while it was killed) | ${http.unreachable} |`);
    console.log(`| resolves answered (status: count) | ${JSON.stringify(countBy(resolveStatuses))} |`);
    console.log(`| worker exits on their own (restarted after 2 s) | ${stack.exits.length} |`);
    console.log(`| last fault's end → every run terminal | ${((allTerminal - lastFaultEnded) / 1000).toFixed(1)} s |`);
    console.log(`| session length | ${((Date.now() - started) / 1000).toFixed(0)} s |`);
  } finally {
    await stack.stop();
    await service.stop();
  }
}

function countBy(values: number[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
