import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { eventually, sleep } from '../helpers/eventually';
import type { FaultHttp, LoadRun, LoadTenant } from '../helpers/fault-runs';
import {
  approve,
  describeFindings,
  dispatchRun,
  expectNothingLostOrDoubled,
  inspectRuns,
  loadPlan,
  newLoadTenant,
} from '../helpers/fault-runs';
import { describeExits, report } from '../helpers/fault-stack';
import { faultStackForSuite } from '../helpers/fault-suite';
import { getStack } from '../helpers/stack';

// Issue 40 item 3: durable waits under faults. A run's wait lives in Temporal (a timer, a signal) and
// in its waitpoint row; a worker killed while runs wait, or Postgres cut while a waitpoint is being
// completed, must lose no run and double no step, completion or event.

const owner = () => getStack().ownerDataSource;

/**
 * A run that waits first (a sleep, a waitpoint, or the run `wait` names), then has its counted side
 * effect (a session named `tag`).
 */
async function dispatchWaiting(http: FaultHttp, tenant: LoadTenant, wait: 'sleep' | 'event' | string, seconds = 20) {
  const tag = `fault-wait-${randomUUID()}`;
  const first =
    wait === 'sleep'
      ? { tool: 'run.sleep', input: { seconds } }
      : wait === 'event'
        ? { tool: 'run.wait_for', input: { name: tag, timeout_seconds: 3600, output_schema: { type: 'object' } } }
        : { tool: 'runs.wait', input: { execution_id: wait } };
  const answer = await http.retrying(tenant.owner.api_key, 'POST', '/v1/runs', {
    agent: 'playbook',
    input: {
      steps: [first, { tool: 'agent.start_session', input: { name: tag } }, { tool: 'billing.credits_balance' }],
    },
    idempotency_key: tag,
  });
  if (answer.status !== 202) throw new Error(`dispatch answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return { executionId: answer.body.execution_id, tenant, tag, approval: false, via: 'http' } as LoadRun;
}

/** A run that starts a child needing approval (the load plan) and waits for it; its execution id. */
async function dispatchParent(http: FaultHttp, tenant: LoadTenant): Promise<string> {
  const tag = `fault-parent-${randomUUID()}`;
  const answer = await http.retrying(tenant.owner.api_key, 'POST', '/v1/runs', {
    agent: 'playbook',
    input: {
      steps: [
        { tool: 'runs.dispatch', input: loadPlan(tag, true) },
        { tool: 'runs.wait', input: { execution_id: { $from: 'steps[0].output.execution_id' } } },
      ],
    },
    idempotency_key: tag,
  });
  if (answer.status !== 202) throw new Error(`dispatch answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer.body.execution_id as string;
}

/** The child a parent waits on, once the parent waits: a load run tagged as its plan's session. */
async function childWaitedOn(http: FaultHttp, tenant: LoadTenant, parentId: string): Promise<LoadRun> {
  return eventually(
    async () => {
      const read = await http.send(tenant.owner.api_key, 'GET', `/v1/runs/${parentId}`);
      if (read.body?.status !== 'WAITING') return undefined;
      const childId = read.body.steps[0].output.execution_id as string;
      const childRead = await http.send(tenant.owner.api_key, 'GET', `/v1/runs/${childId}`);
      const tag = childRead.body.input.steps[1].input.name as string;
      return { executionId: childId, tenant, tag, approval: true, via: 'http' } as LoadRun;
    },
    { what: 'the parent to wait for its child', timeoutMs: 120_000, intervalMs: 200 },
  );
}

/** The waitpoint of a run's first step once the run waits on it: its id and token. */
const waitpointOf = (http: FaultHttp, run: LoadRun) =>
  eventually(
    async () => {
      const read = await http.send(run.tenant.owner.api_key, 'GET', `/v1/runs/${run.executionId}`);
      const output = read.body?.status === 'WAITING' ? read.body.steps[0].output : undefined;
      return output?.waitpoint_id ? (output as { waitpoint_id: string; token: string | null }) : undefined;
    },
    { what: 'the run to wait on its waitpoint', timeoutMs: 120_000, intervalMs: 200 },
  );

/** Each run has one waitpoint, one `waitpoint.created` and one `waitpoint.completed`, and it completed. */
async function waitsOnceEach(runs: LoadRun[]) {
  const ids = runs.map((run) => run.executionId);
  const events = (await owner().query(
    `SELECT execution_id, type, count(*)::int AS n FROM run_events
     WHERE execution_id = ANY($1::uuid[]) AND type LIKE 'waitpoint.%' GROUP BY execution_id, type`,
    [ids],
  )) as { execution_id: string; type: string; n: number }[];
  const waitpoints = (await owner().query(
    `SELECT execution_id, count(*)::int AS n, bool_and(status = 'completed') AS completed FROM waitpoints
     WHERE execution_id = ANY($1::uuid[]) GROUP BY execution_id`,
    [ids],
  )) as { execution_id: string; n: number; completed: boolean }[];
  const wrong: string[] = [];
  for (const id of ids) {
    const wp = waitpoints.find((row) => row.execution_id === id);
    if (wp?.n !== 1 || !wp.completed) wrong.push(`${id}: waitpoints ${JSON.stringify(wp)}`);
    for (const type of ['waitpoint.created', 'waitpoint.completed']) {
      const n = events.find((row) => row.execution_id === id && row.type === type)?.n ?? 0;
      if (n !== 1) wrong.push(`${id}: ${n} ${type}`);
    }
  }
  return wrong;
}

describe('fault: the worker SIGKILLed while runs sleep, wait for waitpoints, another run or a child', function () {
  this.timeout(600_000);
  const fault = faultStackForSuite();

  it('every run finishes once: each wait completes once, each later step runs once', async () => {
    const { stack, http } = fault;
    const tenant = await newLoadTenant(getStack().provisioning, 100);
    const sleeping = await Promise.all(Array.from({ length: 4 }, () => dispatchWaiting(http, tenant, 'sleep')));
    const waiting = await Promise.all(Array.from({ length: 4 }, () => dispatchWaiting(http, tenant, 'event')));
    // Two runs wait (runs.wait) for a third, which waits for a person's approval.
    const awaited = await dispatchRun(http, tenant, true);
    const watching = await Promise.all(
      Array.from({ length: 2 }, () => dispatchWaiting(http, tenant, awaited.executionId)),
    );
    // A parent waits (runs.wait, the id by $from) for the child it started, which waits for a person.
    const parent = await dispatchParent(http, tenant);
    const points = await Promise.all(waiting.map((run) => waitpointOf(http, run)));
    await Promise.all([...sleeping, ...watching].map((run) => waitpointOf(http, run)));
    const child = await childWaitedOn(http, tenant, parent);

    await stack.replaceWorker(0);
    report(
      'injected: worker SIGKILL while 4 runs sleep (20 s), 4 wait for waitpoints, 2 for another run, 1 for its child',
    );
    const approved = await approve(http, awaited, Date.now() + 120_000);
    const childApproved = await approve(http, child, Date.now() + 120_000);
    // Completed while the replacement picks the runs up: half by key, half by their one-time tokens.
    const completions = await Promise.all(
      points.map((point, at) =>
        http.retrying(
          at % 2 === 0 ? tenant.owner.api_key : point.token!,
          'POST',
          `/v1/waitpoints/${point.waitpoint_id}/complete`,
          { output: { at } },
        ),
      ),
    );
    const runs = [...sleeping, ...waiting, ...watching];
    const findings = await inspectRuns(http, owner(), [...runs, awaited, child], Date.now() + 240_000);
    report(`found:\n${describeFindings(findings, http)}\n${describeExits(stack)}`);

    expect(completions.map((answer) => answer.status)).to.deep.equal([200, 200, 200, 200]);
    expect(approved.status).to.equal(200);
    expect(childApproved.status).to.equal(200);
    expectNothingLostOrDoubled(findings, http);
    expect(await waitsOnceEach(runs)).to.deep.equal([]);
    // Each runs.wait step's output is the awaited run's outcome.
    for (const run of watching) {
      const read = await http.send(tenant.owner.api_key, 'GET', `/v1/runs/${run.executionId}`);
      expect(read.body.steps[0].output).to.include({ execution_id: awaited.executionId, status: 'SUCCEEDED' });
    }
    // The parent finished once, with its one child's outcome: no second child across the kill.
    const ended = await eventually(
      async () => {
        const read = await http.send(tenant.owner.api_key, 'GET', `/v1/runs/${parent}`);
        return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(read.body?.status) ? read.body : undefined;
      },
      { what: 'the parent to finish', timeoutMs: 120_000, intervalMs: 500 },
    );
    expect(ended.status).to.equal('SUCCEEDED');
    expect(ended.steps[1].output).to.include({ execution_id: child.executionId, status: 'SUCCEEDED' });
    const children = await http.send(tenant.owner.api_key, 'GET', `/v1/runs?parent=${parent}`);
    expect(children.body.runs.map((run: { execution_id: string }) => run.execution_id)).to.deep.equal([
      child.executionId,
    ]);
  });
});

describe('fault: Postgres cut for 60 s while waitpoints are being completed', function () {
  this.timeout(600_000);
  const fault = faultStackForSuite();

  it('completions in the cut answer 503; retried, each completes once and its run finishes once', async () => {
    const { stack, http } = fault;
    const tenant = await newLoadTenant(getStack().provisioning, 100);
    const waiting = await Promise.all(Array.from({ length: 4 }, () => dispatchWaiting(http, tenant, 'event')));
    const points = await Promise.all(waiting.map((run) => waitpointOf(http, run)));
    const sleeper = await dispatchWaiting(http, tenant, 'sleep', 5);

    await stack.postgres.inject('cut');
    const cutAt = Date.now();
    // Two completions start as the cut begins (they hang, or fail retryably), two half-way through.
    const early = points
      .slice(0, 2)
      .map((point) =>
        http.send(point.token!, 'POST', `/v1/waitpoints/${point.waitpoint_id}/complete`, { output: { early: true } }),
      );
    await sleep(30_000);
    const during = await Promise.all(
      points
        .slice(2)
        .map((point) =>
          http.send(tenant.owner.api_key, 'POST', `/v1/waitpoints/${point.waitpoint_id}/complete`, { output: {} }),
        ),
    );
    await sleep(Math.max(0, cutAt + 60_000 - Date.now()));
    await stack.postgres.heal();
    report(`injected: Postgres cut for 60 s; completions during it answered ${during.map((a) => a.status)}`);

    // Every completion is retried until it is answered for good: 200 once, or 409 if an earlier try committed.
    const earlyAnswers = await Promise.all(early);
    const retried = await Promise.all(
      points.map((point, at) =>
        http.retrying(point.token!, 'POST', `/v1/waitpoints/${point.waitpoint_id}/complete`, { output: { at } }),
      ),
    );
    const runs = [...waiting, sleeper];
    const findings = await inspectRuns(http, owner(), runs, Date.now() + 240_000);
    report(
      `early completions answered ${earlyAnswers.map((a) => a.status)}, retried ${retried.map((a) => a.status)}\n` +
        `found:\n${describeFindings(findings, http)}\n${describeExits(stack)}`,
    );

    expect(during.map((answer) => answer.status)).to.deep.equal([503, 503]);
    for (const [at, answer] of retried.entries()) {
      const committedBefore = at < 2 && earlyAnswers[at]!.status === 200;
      expect(answer.status, `completion ${at}`).to.equal(committedBefore ? 409 : 200);
    }
    expectNothingLostOrDoubled(findings, http);
    expect(await waitsOnceEach(runs)).to.deep.equal([]);
  });
});
