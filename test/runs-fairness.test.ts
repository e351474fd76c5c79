import { expect } from 'chai';
import type { DevServer } from '../src/platform/temporal/dev-server';
import { freePort, startDevServer } from '../src/platform/temporal/dev-server';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { bootStack, getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

type Client = ReturnType<typeof as>;

const oneStep = (priority?: number) => ({
  agent: 'playbook',
  input: { steps: [{ tool: 'billing.credits_balance' }] },
  ...(priority ? { flow: { priority } } : {}),
});

/**
 * Dispatches `count` runs, at most `inFlight` requests at a time; their execution ids in dispatch
 * order. A 503 (the database's pool was busy) is retried, as a client would.
 */
async function dispatch(client: Client, count: number, body: object, inFlight = 16): Promise<string[]> {
  const ids: string[] = new Array(count);
  let next = 0;
  const post = async (): Promise<string> => {
    const answer = await client.post('/v1/runs', body);
    if (answer.status === 503) return post();
    expect(answer.status, JSON.stringify(answer.body)).to.equal(202);
    return answer.body.execution_id;
  };
  const lane = async () => {
    for (let at = next++; at < count; at = next++) ids[at] = await post();
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, lane));
  return ids;
}

/** Each run's start: when its first step started, and how long after its dispatch (the database's clock). */
async function starts(ids: readonly string[]): Promise<Map<string, { at: number; delay: number }>> {
  const rows: { id: string; created: Date; started: Date | null }[] = await getStack().ownerDataSource.query(
    `SELECT e.id, e.created_at AS created, min(s.started_at) AS started
       FROM run_executions e JOIN run_steps s ON s.execution_id = e.id
      WHERE e.id = ANY($1) GROUP BY e.id, e.created_at`,
    [ids],
  );
  const found = new Map<string, { at: number; delay: number }>();
  for (const row of rows) {
    if (row.started)
      found.set(row.id, { at: row.started.getTime(), delay: row.started.getTime() - row.created.getTime() });
  }
  return found;
}

/** Waits until every run's first step started; their start delays. */
const startDelays = (ids: readonly string[], what: string) =>
  eventually(
    async () => {
      const found = await starts(ids);
      return found.size === ids.length ? ids.map((id) => found.get(id)!.delay) : undefined;
    },
    { what, timeoutMs: 90_000, intervalMs: 50 },
  );

const p95 = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(0.95 * sorted.length) - 1)]!;
};

const queuedIn = async (workspaceId: string) =>
  Number(
    (
      await getStack().ownerDataSource.query(
        `SELECT count(*) AS n FROM run_executions WHERE workspace_id = $1 AND status = 'QUEUED'`,
        [workspaceId],
      )
    )[0].n,
  );

// Issue 43 items 1 and 2: Temporal's task queue dispatches a backlog fairly between workspaces (each
// workspace's id is its runs' fairness key); `flow.priority` orders a workspace's own runs, at Weft's gate
// (src/runs/priority-gate.ts), never ahead of another workspace's.
describe('fair queueing between workspaces, and priority within one (issue 43)', function () {
  this.timeout(240_000);
  let booted: Awaited<ReturnType<typeof bootStack>>;
  let clientOf: (token: string) => Client;
  let temporal: DevServer | undefined;
  before(async function () {
    this.timeout(60_000);
    // A Temporal server of its own, as the bench's, apart from every earlier file's workflows. (It did not lower
    // B's ratio in full runs: ×1.91 with it against ×1.64–1.82 on the suite's shared server.)
    const address = `127.0.0.1:${await freePort()}`;
    temporal = await startDevServer({ address });
    // A worker that takes about what its database pool can run at once: the rest waits, in Temporal's
    // queue where fairness applies, or held at the priority gate (WORKER_MAX_ACTIVITIES, docs/operations.md).
    booted = await bootStack({
      WORKER_MAX_ACTIVITIES: '10',
      WORKER_MAX_WORKFLOW_TASKS: '4',
      TEMPORAL_ADDRESS: address,
    });
    clientOf = (token) => as(token, booted.stack.baseUrl);
  });
  after(async function () {
    this.timeout(60_000);
    await booted?.stop();
    await temporal?.stop();
  });

  // The workspaces a try of the test below flooded: a second try first waits for their runs to end.
  const flooded: string[] = [];
  it("starts another workspace's runs ahead of 500 of another's, and priority 1 before 5", async function () {
    // One retry: in a full suite run the median batch read ×1.64–1.91 (the file alone ×1.22–1.62), near enough
    // to the line for one unlucky try to cross it; a broken fairness crosses it by far (4 partitions read ×2.46,
    // first come, first served ×10 and more in the bench).
    this.retries(1);
    await eventually(
      async () => {
        const [{ n }] = await getStack().ownerDataSource.query(
          `SELECT count(*)::int AS n FROM run_executions WHERE workspace_id = ANY($1) AND finished_at IS NULL`,
          [flooded],
        );
        return n === 0 || undefined;
      },
      { what: "an earlier try's flood to end", timeoutMs: 180_000, intervalMs: 500 },
    );
    const [a, b] = await Promise.all([newTenant(100_000), newTenant(100_000)]);
    flooded.push(a.workspace_id);
    const [clientA, clientB] = [clientOf(a.api_key), clientOf(b.api_key)];
    // Warm-up, then B's idle baseline: three times five runs dispatched at once on an idle queue.
    await startDelays(await dispatch(clientB, 5, oneStep()), 'the warm-up runs to start');
    const idleDelays = [];
    for (let round = 0; round < 3; round++) {
      idleDelays.push(...(await startDelays(await dispatch(clientB, 5, oneStep()), "B's idle runs to start")));
    }
    const idle = p95(idleDelays);

    const flood = await dispatch(clientA, 500, oneStep(), 32);
    const backlog = await queuedIn(a.workspace_id);
    // Under the flood, B dispatches its five runs five times over (one batch after the other, each while most
    // of A's backlog still waits): a p95 of five runs is their slowest, so one batch is one noisy sample.
    const ratios: number[] = [];
    let bUnderFlood: string[] = [];
    for (let batch = 0; batch < 5; batch++) {
      bUnderFlood = await dispatch(clientB, 5, oneStep());
      ratios.push(p95(await startDelays(bUnderFlood, "B's runs to start")) / idle);
    }
    const leftBehind = await queuedIn(a.workspace_id);
    const ratio = [...ratios].sort((x, y) => x - y)[2]!;
    console.log(
      `      B's p95 start delay: ${idle} ms idle; under A's flood ×${ratios.map((r) => r.toFixed(2)).join(', ×')} ` +
        `(median ×${ratio.toFixed(2)}); A had ${backlog} runs QUEUED, ${leftBehind} still when B's had started`,
    );
    // Issue 43's bound: B's p95 start delay under A's 500-run flood within 2× of its idle one (the median batch).
    expect(ratio, "B's p95 start delay under the flood ÷ idle (median of five batches)").to.be.at.most(2);

    // Within A, behind what is left of its backlog (priority 3): priority-5 runs, then priority-1 ones.
    const low = await dispatch(clientA, 10, oneStep(5));
    const high = await dispatch(clientA, 10, oneStep(1));
    expect((await clientA.get(`/v1/runs/${high[0]}`)).body.flow).to.include({ priority: 1 });
    expect((await clientA.get(`/v1/runs/${low[0]}`)).body.flow).to.include({ priority: 5 });
    await startDelays(high, 'the priority-1 runs to start');
    const lowStarted = (await starts(low)).size;
    const stillQueued = await queuedIn(a.workspace_id);
    console.log(
      `      when the last priority-1 run started: ${lowStarted}/10 priority-5 runs started, ${stillQueued} QUEUED`,
    );
    expect(lowStarted, 'priority-5 runs (dispatched earlier) already started').to.equal(0);
    expect(stillQueued, 'runs of priority 3 and 5 still waiting').to.be.greaterThan(10);

    // B's runs overtook A's backlog: most of it still waited once all of B's had started (first come, first
    // served leaves none).
    expect(leftBehind, "A's runs still waiting once B's started").to.be.greaterThan(backlog / 2);

    // A's flood was weighed down by its own backlog (src/runs/fair-share.ts), B's runs kept the default weight:
    // the flood's 200th run, dispatched behind well over 16 of A's waiting runs, once the gate has released it.
    const weightOf = (id: string) =>
      eventually(
        async () => {
          const handle = booted.stack.runtime.temporal.client.workflow.getHandle(`run-${id}`);
          return (await handle.describe().catch(() => undefined))?.priority;
        },
        { what: `run ${id}'s workflow`, timeoutMs: 180_000, intervalMs: 250 },
      );
    const [ofFlood, ofB] = [await weightOf(flood[199]!), await weightOf(bUnderFlood[0]!)];
    expect(ofFlood.fairnessKey).to.equal(a.workspace_id);
    expect(ofFlood.fairnessWeight, "the flood's 200th run's weight").to.be.a('number').and.lessThan(0.5);
    expect(ofB.fairnessWeight || 1, "B's run's weight (unset reads 0: the server's default, 1)").to.equal(1);
  });

  it("starts another workspace's default runs ahead of a priority-1 flood, and strands none of it", async () => {
    const [a, b] = await Promise.all([newTenant(100_000), newTenant(100_000)]);
    const [clientA, clientB] = [clientOf(a.api_key), clientOf(b.api_key)];
    const flood = await dispatch(clientA, 300, oneStep(1), 32);
    const backlog = await queuedIn(a.workspace_id);
    await startDelays(await dispatch(clientB, 5, oneStep()), "B's runs to start");
    const leftBehind = await queuedIn(a.workspace_id);
    console.log(`      A's priority-1 flood: ${backlog} QUEUED, ${leftBehind} still once B's priority-3 runs started`);
    // Were the priority Temporal's priority key, B's runs would wait for the whole flood (none left behind).
    expect(leftBehind, "A's runs still waiting once B's started").to.be.greaterThan(backlog / 2);

    // Nothing is stranded at the gate: every run of the flood starts and succeeds.
    await eventually(
      async () => {
        const [{ n }] = await getStack().ownerDataSource.query(
          `SELECT count(*)::int AS n FROM run_executions WHERE id = ANY($1) AND status = 'SUCCEEDED'`,
          [flood],
        );
        return n === flood.length || undefined;
      },
      { what: 'every run of the flood to succeed', timeoutMs: 120_000, intervalMs: 500 },
    );
  });

  it('refuses a priority outside 1–5 with 422', async () => {
    const client = clientOf((await newTenant(100)).api_key);
    for (const priority of [0, 6, 2.5, '1']) {
      const answer = await client.post('/v1/runs', { ...oneStep(), flow: { priority } });
      expect(answer.status, String(priority)).to.equal(422);
      expect(answer.body.detail[0].loc).to.deep.equal(['body', 'flow', 'priority']);
    }
    expect((await client.post('/v1/runs', { ...oneStep(), flow: { priority: 3, weight: 2 } })).status).to.equal(422);
  });
});
