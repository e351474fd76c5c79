import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { OutboxMessage } from '../src/platform/outbox/relay';
import { createOutboxRelay, enqueueOutboxEvent } from '../src/platform/outbox/relay';
import { outboxSweepWorkflow } from '../src/platform/outbox/workflow';
import { LIMITS } from '../src/rules/limits';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

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
      enqueueOutboxEvent(m, { workspaceId: t.workspace_id, eventType: 'test.good', aggregateId: goodId }),
    );

    const delivered: OutboxMessage[] = [];
    // This workspace's rows only, through a relay whose poison handler always fails and whose
    // backoff is zero, so that each pass is the next attempt.
    const relay = createOutboxRelay({
      uow: runtime.uow,
      // Each dead letter is logged at error level; these are expected.
      logger: runtime.logger.child({}, { level: 'silent' }),
      handlers: {
        'test.poison': [
          async () => {
            throw new Error('poison');
          },
        ],
        'test.good': [async (event) => void delivered.push(event)],
      },
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
      enqueueOutboxEvent(m, { workspaceId: t.workspace_id, eventType: 'test.flaky', aggregateId: randomUUID() }),
    );
    let calls = 0;
    const relay = createOutboxRelay({
      uow: runtime.uow,
      logger: runtime.logger,
      handlers: {
        'test.flaky': [
          async () => {
            calls += 1;
            if (calls === 1) throw new Error('flaky');
          },
        ],
      },
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
