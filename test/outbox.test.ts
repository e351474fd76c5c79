import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { z } from 'zod';
import { OUTBOX_EVENTS } from '../src/app/outbox-handlers';
import { defineEvent } from '../src/platform/outbox/event';
import type { OutboxMessage } from '../src/platform/outbox/relay';
import { createOutboxRelay, enqueueEvent, onEvent } from '../src/platform/outbox/relay';
import { listDeadLetters } from '../src/platform/outbox/repository';
import { outboxSweepWorkflow } from '../src/platform/outbox/workflow';
import { LIMITS } from '../src/rules/limits';
import { decisionRecorded } from '../src/runs/events';
import { capClient } from './helpers/cap';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { scheduleGone } from './helpers/run-schedules';
import { finished, runUntil } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

// Events of these tests only: the stack's relay does not know them.
const testPoison = defineEvent('test.poison', 1, z.object({}));
const testGood = defineEvent('test.good', 1, z.object({}));
const testFlaky = defineEvent('test.flaky', 1, z.object({}));

interface OutboxRow {
  id: string;
  event_type: string;
  attempts: number;
  dispatched_at: Date | null;
  dead_lettered_at: Date | null;
  last_error: string | null;
}

const rowsOf = (workspaceId: string): Promise<OutboxRow[]> =>
  getStack().ownerDataSource.query(
    `SELECT id::text, event_type, attempts, dispatched_at, dead_lettered_at, last_error FROM outbox
     WHERE workspace_id = $1 ORDER BY id`,
    [workspaceId],
  );

describe('outbox delivery', function () {
  this.timeout(60_000);

  it('does not let 201 poison rows starve a newer one; they are dead-lettered after the maximum attempts', async () => {
    const { runtime, ownerDataSource } = getStack();
    const t = await newTenant();
    await ownerDataSource.query(
      `INSERT INTO outbox (workspace_id, event_type, aggregate_id)
       SELECT $1, 'test.poison', gen_random_uuid() FROM generate_series(1, 201)`,
      [t.workspace_id],
    );
    const goodId = randomUUID();
    await runtime.uow({ workspaceId: t.workspace_id }, (m) =>
      enqueueEvent(m, testGood, { workspaceId: t.workspace_id, aggregateId: goodId, payload: {} }),
    );

    const delivered: OutboxMessage[] = [];
    // This workspace's rows only, through a relay whose poison handler always fails and whose
    // backoff is zero, so that each pass is the next attempt.
    const relay = createOutboxRelay({
      uow: runtime.uow,
      // Each dead letter is logged at error level; these are expected.
      logger: runtime.logger.child({}, { level: 'silent' }),
      handlers: [
        onEvent(testPoison, async () => {
          throw new Error('poison');
        }),
        onEvent(testGood, async (event) => void delivered.push(event)),
      ],
      policy: { retryBaseSeconds: 0 },
    });

    const first = await relay.drainWorkspace(t.workspace_id);
    expect(first).to.deep.equal({ dispatched: 1, failed: 201, deadLettered: 0 });
    expect(delivered.map((event) => event.aggregate_id)).to.deep.equal([goodId]);
    const good = (await rowsOf(t.workspace_id)).find((row) => row.event_type === 'test.good');
    expect(good?.dispatched_at).to.be.instanceOf(Date);

    for (let attempt = 2; attempt < LIMITS.outbox.maxAttempts; attempt++) {
      expect(await relay.drainWorkspace(t.workspace_id)).to.include({ failed: 201, deadLettered: 0 });
    }
    expect(await relay.drainWorkspace(t.workspace_id)).to.deep.equal({ dispatched: 0, failed: 0, deadLettered: 201 });
    // Dead letters are never retried.
    expect(await relay.drainWorkspace(t.workspace_id)).to.deep.equal({ dispatched: 0, failed: 0, deadLettered: 0 });

    const poison = (await rowsOf(t.workspace_id)).filter((row) => row.event_type === 'test.poison');
    expect(poison).to.have.length(201);
    for (const row of poison) {
      expect(row.attempts).to.equal(LIMITS.outbox.maxAttempts);
      expect(row.dead_lettered_at).to.be.instanceOf(Date);
      expect(row.dispatched_at).to.equal(null);
      expect(row.last_error).to.equal('poison');
    }
    expect(delivered).to.have.length(1);
  });

  it('backs a failed row off before its next attempt', async () => {
    const { runtime } = getStack();
    const t = await newTenant();
    await runtime.uow({ workspaceId: t.workspace_id }, (m) =>
      enqueueEvent(m, testFlaky, { workspaceId: t.workspace_id, aggregateId: randomUUID(), payload: {} }),
    );
    let calls = 0;
    const relay = createOutboxRelay({
      uow: runtime.uow,
      logger: runtime.logger,
      handlers: [
        onEvent(testFlaky, async () => {
          calls += 1;
          if (calls === 1) throw new Error('flaky');
        }),
      ],
    });
    expect(await relay.drainWorkspace(t.workspace_id)).to.include({ failed: 1 });
    // Within the backoff the row is not attempted again, however often the fast path runs.
    expect(await relay.drainWorkspace(t.workspace_id)).to.deep.equal({ dispatched: 0, failed: 0, deadLettered: 0 });
    expect(calls).to.equal(1);
    await getStack().ownerDataSource.query(
      `UPDATE outbox SET next_attempt_at = now() - interval '1 second' WHERE workspace_id = $1`,
      [t.workspace_id],
    );
    expect(await relay.drainWorkspace(t.workspace_id)).to.include({ dispatched: 1 });
    const [row] = await rowsOf(t.workspace_id);
    expect(row).to.include({ attempts: 2, last_error: null });
  });

  it('rows held up by a Temporal outage leave once it answers again, not after their backoff (issue 44)', async () => {
    const { runtime } = getStack();
    const t = await newTenant();
    await runtime.uow({ workspaceId: t.workspace_id }, (m) =>
      enqueueEvent(m, testFlaky, { workspaceId: t.workspace_id, aggregateId: randomUUID(), payload: {} }),
    );
    // Temporal "down" until the test says otherwise: the probe is what the API asks (getSystemInfo).
    let up = false;
    let probes = 0;
    let calls = 0;
    const relay = createOutboxRelay({
      uow: runtime.uow,
      logger: runtime.logger.child({}, { level: 'silent' }),
      handlers: [
        onEvent(testFlaky, async () => {
          calls += 1;
          if (!up) throw Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 });
        }),
      ],
      // An hour's backoff: only the release can deliver the row within the test.
      policy: { temporalProbeMs: 50, retryBaseSeconds: 3600, transientRetryMaxSeconds: 3600 },
      temporalAnswers: async () => {
        probes += 1;
        return up;
      },
    });
    expect(await relay.drainWorkspace(t.workspace_id)).to.include({ failed: 1 });
    // Backed off and probed while down: nothing delivers it yet.
    await eventually(async () => probes >= 2, { what: 'the relay to probe Temporal' });
    expect(calls).to.equal(1);
    up = true;
    await eventually(async () => (await rowsOf(t.workspace_id))[0]?.dispatched_at instanceof Date, {
      what: 'the held-up row to be delivered once Temporal answers',
    });
    expect(calls).to.equal(2);
  });

  it('a transient failure while Temporal answers (Postgres’s) keeps its backoff', async () => {
    const { runtime } = getStack();
    const t = await newTenant();
    await runtime.uow({ workspaceId: t.workspace_id }, (m) =>
      enqueueEvent(m, testFlaky, { workspaceId: t.workspace_id, aggregateId: randomUUID(), payload: {} }),
    );
    let probes = 0;
    const relay = createOutboxRelay({
      uow: runtime.uow,
      logger: runtime.logger.child({}, { level: 'silent' }),
      handlers: [
        onEvent(testFlaky, async () => {
          throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
        }),
      ],
      temporalAnswers: async () => {
        probes += 1;
        return true;
      },
    });
    expect(await relay.drainWorkspace(t.workspace_id)).to.include({ failed: 1 });
    await eventually(async () => probes >= 1, { what: 'the relay to probe Temporal' });
    const [row] = await getStack().ownerDataSource.query(
      `SELECT next_attempt_at > now() AS backed_off FROM outbox WHERE workspace_id = $1`,
      [t.workspace_id],
    );
    expect(row.backed_off).to.equal(true);
  });

  it('the sweep purges delivered rows past the retention, keeps the rest, and reports dead letters', async () => {
    const { runtime, config, ownerDataSource } = getStack();
    const t = await newTenant();
    const days = LIMITS.outbox.retentionDays;
    await ownerDataSource.query(
      `INSERT INTO outbox (workspace_id, event_type, aggregate_id, created_at, dispatched_at, dead_lettered_at,
       attempts)
       VALUES ($1, 'test.old_delivered', gen_random_uuid(), now() - make_interval(days => $2 + 2),
               now() - make_interval(days => $2 + 1), NULL, 1),
              ($1, 'test.recent_delivered', gen_random_uuid(), now() - interval '2 days', now() - interval '1 day',
                NULL, 1),
              ($1, 'test.old_dead', gen_random_uuid(), now() - make_interval(days => $2 + 2), NULL,
               now() - make_interval(days => $2 + 1), 10)`,
      [t.workspace_id, days],
    );
    const result = await runtime.temporal.client.workflow.execute(outboxSweepWorkflow.type, {
      args: [{ minAgeSeconds: 0 }],
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowId: `outbox-sweep-test-${randomUUID()}`,
    });
    expect(result).to.include.keys('workspaces', 'dispatched', 'deadLettered', 'purged');
    expect(result.purged).to.be.at.least(1);
    const left = (await rowsOf(t.workspace_id)).map((row) => row.event_type);
    expect(left).to.deep.equal(['test.recent_delivered', 'test.old_dead']);
  });
});

describe('outbox event contracts', function () {
  this.timeout(60_000);

  it('an unknown event type or a malformed payload is dead-lettered at once with a reason, never retried', async () => {
    const { runtime, ownerDataSource } = getStack();
    const t = await newTenant();
    const executionId = randomUUID();
    await ownerDataSource.query(
      `INSERT INTO outbox (workspace_id, event_type, aggregate_id, payload)
       VALUES ($1, 'test.no_such_event', gen_random_uuid(), '{}'),
              ($1, 'run.dispatched', $2, jsonb_build_object('execution_id', 42, 'agent', 'robot'))`,
      [t.workspace_id, executionId],
    );
    // Behind them, a row the stack's relay knows (nothing handles it).
    await runtime.uow({ workspaceId: t.workspace_id }, (m) =>
      enqueueEvent(m, decisionRecorded, {
        workspaceId: t.workspace_id,
        aggregateId: executionId,
        payload: { execution_id: executionId, step_id: randomUUID(), supersedes_step_id: null },
      }),
    );
    const quiet = createOutboxRelay({
      uow: runtime.uow,
      events: OUTBOX_EVENTS,
      // The stack's contracts, no handlers: below, the stack's relay (startRun among its handlers) finds nothing left.
      handlers: [],
      // Dead letters are logged at error level; these are expected.
      logger: runtime.logger.child({}, { level: 'silent' }),
    });
    expect(await quiet.drainWorkspace(t.workspace_id)).to.deep.equal({ dispatched: 1, failed: 0, deadLettered: 2 });
    expect(await quiet.drainWorkspace(t.workspace_id)).to.deep.equal({ dispatched: 0, failed: 0, deadLettered: 0 });
    // The stack's relay agrees: nothing left to deliver, nothing started.
    expect(await runtime.outbox.drainWorkspace(t.workspace_id)).to.deep.equal({
      dispatched: 0,
      failed: 0,
      deadLettered: 0,
    });

    const rows = await rowsOf(t.workspace_id);
    const [unknown, malformed, known] = rows;
    expect(unknown).to.include({ event_type: 'test.no_such_event', attempts: 1, dispatched_at: null });
    expect(unknown?.dead_lettered_at).to.be.instanceOf(Date);
    expect(unknown?.last_error).to.equal('unknown event type: test.no_such_event');
    expect(malformed).to.include({ event_type: 'run.dispatched', attempts: 1, dispatched_at: null });
    expect(malformed?.dead_lettered_at).to.be.instanceOf(Date);
    expect(malformed?.last_error).to.match(/^malformed payload for run\.dispatched v1: /);
    expect(malformed?.last_error).to.include('execution_id').and.include('agent').and.include('step_count');
    expect(known?.dispatched_at).to.be.instanceOf(Date);

    // The operator's CLI lists them with their reasons.
    const listed = await ownerDataSource.transaction((m) => listDeadLetters(m, 1000));
    const mine = listed.filter((letter) => letter.workspace_id === t.workspace_id).map((letter) => letter.last_error);
    expect(mine).to.have.members([unknown?.last_error, malformed?.last_error]);
    // Nothing was started for the malformed dispatch.
    const started = await runtime.temporal.client.workflow
      .getHandle(`run-${executionId}`)
      .describe()
      .then(
        () => true,
        (error: Error) => error.name !== 'WorkflowNotFoundError',
      );
    expect(started).to.equal(false);
  });

  it('every event the features write matches its contract', async () => {
    const { ownerDataSource } = getStack();
    const t = await newTenant();
    const client = as(t.api_key);
    const node = (await client.post('/v1/ontology/nodes', { type: 'person', name: 'Grace' })).body;
    await client.patch(`/v1/ontology/nodes/${node.id}`, { name: 'Grace Hopper' });
    const run = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'agent.start_session', input: { name: 'contracts' }, requires_approval: false }] },
      // Refused at connect time on this stack (a loopback name), so its delivery ends at the first attempt.
      callback: { url: 'http://localhost:9/contracts' },
    });
    expect(run.status).to.equal(202);
    await client.post('/v1/runs', { agent: 'llm', input: { goal: 'check the contracts' } });
    // A decision is recorded on a run still going (the one above may have finished already): this one waits
    // for its approval until it is cancelled.
    const waiting = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance', input: {}, requires_approval: true }] },
    });
    const decided = await client.post('/v1/cap/agent.record_decision', {
      execution_id: waiting.body.execution_id,
      decision: 'plan A',
    });
    expect(decided.status, decided.text).to.equal(200);
    expect((await client.post(`/v1/runs/${waiting.body.execution_id}/cancel`)).status).to.equal(200);
    // A waitpoint settled (issue 40 item 3): a run waits for an outside answer, which is given.
    const held = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'run.wait_for', input: { name: 'contracts', timeout_seconds: 600 } }] },
    });
    const point = await runUntil(client, held.body.execution_id, (body) => body.status === 'WAITING', 'the wait');
    const completed = await client.post(`/v1/waitpoints/${point.steps[0].output.waitpoint_id}/complete`, {
      output: { ok: true },
    });
    expect(completed.status, completed.text).to.equal(200);
    // A debounced run (issue 43 item 2) is held: its run.flow_held event starts its timer.
    const debounced = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance', input: {} }] },
      flow: { debounce: { key: 'contracts', period_seconds: 1 } },
    });
    expect(debounced.body.queued_reason, debounced.text).to.equal('debounced');
    const cap = capClient(t.api_key);
    const { session_id } = (await cap('agent.start_session')).body.result;
    await cap('agent.end_session', { session_id, outcome: 'failed', error_signature: 'TypeError: x' });
    const code = await client.post('/v1/code/ingest', {
      repo: 'contracts',
      run_id: randomUUID(),
      symbols: [{ kind: 'file', path: 'src/x.ts', name: 'src/x.ts' }],
    });
    expect(code.status).to.equal(200);
    const schedule = await client.post('/v1/run-schedules', {
      cron: '@daily',
      paused: true,
      run: { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance', input: {} }] } },
    });
    expect(schedule.status, schedule.text).to.equal(201);
    // Deleted again (its own change event): the suite leaves no Temporal Schedule behind.
    expect((await client.delete(`/v1/run-schedules/${schedule.body.id}`)).status).to.equal(200);
    await scheduleGone(schedule.body.id);
    await getStack().runtime.services.embeddings.requeue({
      workspaceId: t.workspace_id,
      requests: [{ nodeId: node.id, eventId: 'contracts', backfill: true }],
    });

    // run_callback.queued is written when the run finishes.
    await finished(client, run.body.execution_id);
    const rows: { event_type: string; payload: unknown }[] = await ownerDataSource.query(
      `SELECT event_type, payload FROM outbox WHERE workspace_id = $1 ORDER BY id`,
      [t.workspace_id],
    );
    const contracts = new Map(OUTBOX_EVENTS.map((contract) => [contract.name, contract]));
    // Every contract is written above, and nothing else.
    expect([...new Set(rows.map((row) => row.event_type))]).to.have.members([...contracts.keys()]);
    for (const row of rows) {
      const contract = contracts.get(row.event_type);
      expect(contract, row.event_type).to.not.equal(undefined);
      const parsed = contract!.payload.safeParse(row.payload);
      expect(parsed.success, `${row.event_type}: ${JSON.stringify(row.payload)}`).to.equal(true);
    }
  });

  it('no SQL function writes outbox rows: every row is written through its contract', async () => {
    // A function that inserts outbox rows would bypass `enqueueEvent`; it needs its own contract test.
    const writers: { proname: string }[] = await getStack().ownerDataSource.query(
      `SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE n.nspname = 'public' AND p.prosrc ~* 'insert\\s+into\\s+(public\\.)?outbox\\M'`,
    );
    expect(writers).to.deep.equal([]);
  });
});
