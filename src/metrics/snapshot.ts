import { Counter, Gauge, Registry } from 'prom-client';
import type { DataSource } from 'typeorm';
import { LIMITS } from '../rules/limits';

/** One row of `weft_metrics_snapshot()` (migration 1763780012000): a family, up to two labels, a value. */
interface SnapshotRow {
  family: string;
  label_a: string;
  label_b: string;
  value: number;
}

export interface MetricsSnapshot {
  /** The exposition text of the cross-workspace figures, read at most every `snapshotCacheMs`. */
  text(): Promise<string>;
}

/**
 * The figures only the database knows, across every workspace: runs by status and agent, approvals
 * pending and the oldest one's age, the outbox's backlog, lag and dead letters, webhook deliveries by
 * outcome, and credits reserved, charged and refunded by ledger kind. They come from one definer
 * function that returns aggregates only, so no workspace id can reach a label; the statement runs
 * under its own `statement_timeout` and its answer is cached, so scrapes cost one statement per
 * `LIMITS.metrics.snapshotCacheMs` whatever their number. On a failure the last good answer stays.
 *
 * They are the API's alone (they are the database's, not a process's): a worker's /metrics leaves them
 * out, so that summing over processes does not count them twice.
 */
export function createMetricsSnapshot(deps: { dataSource: DataSource; now?: () => number }): MetricsSnapshot {
  const now = deps.now ?? Date.now;
  const registry = new Registry();
  const gauge = (name: string, help: string, labelNames: string[] = []) =>
    new Gauge({ name, help, labelNames, registers: [registry] });

  const runs = gauge('weft_runs', 'Runs by status and agent (every workspace).', ['status', 'agent']);
  const approvals = gauge('weft_run_approvals_pending', 'Approvals waiting for a decision.');
  const approvalAge = gauge(
    'weft_run_approvals_pending_oldest_age_seconds',
    'How long the oldest pending approval has waited (0 when none waits).',
  );
  const backlog = gauge('weft_outbox_backlog', 'Outbox events not yet dispatched (dead letters excluded).');
  const lag = gauge('weft_outbox_lag_seconds', 'Age of the oldest undispatched outbox event (0 when none).');
  const deadLetters = gauge('weft_outbox_dead_letters', 'Outbox events dead-lettered (`weft outbox requeue`).');
  const deliveries = gauge(
    'weft_webhook_deliveries',
    'Webhook deliveries kept (within their retention) by outcome: accepted, duplicate, refused, rate_limited, failed.',
    ['outcome'],
  );
  const reserved = gauge('weft_credits_reserved', 'Credits ever taken by reservations, by ledger kind.', ['kind']);
  const pending = gauge('weft_credits_pending', 'Credits held by reservations not yet settled, by kind.', ['kind']);
  const refunded = gauge('weft_credits_refunded', 'Credits given back by refunds, by the reservation’s kind.', [
    'kind',
  ]);
  const charged = gauge('weft_credits_charged', 'Credits charged for good: reserved − refunded − pending, by kind.', [
    'kind',
  ]);
  const failures = new Counter({
    name: 'weft_metrics_snapshot_failures_total',
    help: 'Snapshot statements that failed or ran past their budget.',
    registers: [registry],
  });
  // Issue 43 item 5: how runs queue, across workspaces, never labelled with a workspace id.
  const queued = gauge(
    'weft_runs_queued_per_workspace',
    'Runs waiting to start (QUEUED) per workspace, over the workspaces with any: p50, p95 and max.',
    ['quantile'],
  );
  const queuedTop = gauge(
    'weft_runs_queued_top',
    'The workspaces with the most runs waiting to start, by rank and a hash of the workspace id.',
    ['rank', 'hash'],
  );
  const startDelay = gauge(
    'weft_run_start_delay_seconds',
    'From dispatch to the first step’s start, over runs created in the last 15 minutes: p50, p95 and max.',
    ['quantile'],
  );
  const startDelayTop = gauge(
    'weft_run_start_delay_top_seconds',
    'The workspaces whose runs waited longest to start (p95, last 15 minutes), by rank and a hash of the id.',
    ['rank', 'hash'],
  );
  const queuedByPriority = gauge(
    'weft_runs_queued_by_priority',
    'Runs waiting to start (QUEUED) in every workspace, by their flow.priority (1 first).',
    ['priority'],
  );
  const startDelayByPriority = gauge(
    'weft_run_start_delay_by_priority_seconds',
    'From dispatch to the first step’s start, over runs created in the last 15 minutes, by flow.priority: ' +
      'p50, p95 and max.',
    ['priority', 'quantile'],
  );
  const age = gauge('weft_metrics_snapshot_age_seconds', 'How old the figures above are.');

  let taken: { at: number; rows: SnapshotRow[] } | undefined;
  let inFlight: Promise<void> | undefined;

  async function read(): Promise<void> {
    try {
      const rows = await deps.dataSource.transaction(async (m) => {
        await m.query(`SET LOCAL statement_timeout = ${Math.trunc(LIMITS.metrics.snapshotBudgetMs)}`);
        return (await m.query(`SELECT family, label_a, label_b, value FROM weft_metrics_snapshot()`)) as SnapshotRow[];
      });
      taken = { at: now(), rows };
    } catch {
      failures.inc();
    }
  }

  function publish(rows: readonly SnapshotRow[]) {
    for (const metric of [runs, approvals, approvalAge, backlog, lag, deadLetters, deliveries]) metric.reset();
    for (const metric of [reserved, pending, refunded, charged]) metric.reset();
    for (const metric of [queued, queuedTop, startDelay, startDelayTop, queuedByPriority, startDelayByPriority]) {
      metric.reset();
    }
    const byKind = { reserved: new Map<string, number>(), pending: new Map(), refunded: new Map() };
    for (const row of rows) {
      const value = Number(row.value);
      if (row.family === 'runs') runs.set({ status: row.label_a, agent: row.label_b }, value);
      else if (row.family === 'approvals_pending') approvals.set(value);
      else if (row.family === 'approvals_oldest_age') approvalAge.set(value);
      else if (row.family === 'outbox_backlog') backlog.set(value);
      else if (row.family === 'outbox_lag') lag.set(value);
      else if (row.family === 'outbox_dead_letters') deadLetters.set(value);
      else if (row.family === 'webhook_deliveries') deliveries.set({ outcome: row.label_a }, value);
      else if (row.family === 'credits_reserved') byKind.reserved.set(row.label_a, value);
      else if (row.family === 'credits_pending') byKind.pending.set(row.label_a, value);
      else if (row.family === 'credits_refunded') byKind.refunded.set(row.label_a, value);
      else if (row.family === 'runs_queued_workspaces') queued.set({ quantile: row.label_a }, value);
      else if (row.family === 'runs_queued_top') queuedTop.set({ rank: row.label_a, hash: row.label_b }, value);
      else if (row.family === 'runs_start_delay') startDelay.set({ quantile: row.label_a }, value);
      else if (row.family === 'runs_start_delay_top') {
        startDelayTop.set({ rank: row.label_a, hash: row.label_b }, value);
      } else if (row.family === 'runs_queued_priority') queuedByPriority.set({ priority: row.label_a }, value);
      else if (row.family === 'runs_start_delay_priority') {
        startDelayByPriority.set({ priority: row.label_a, quantile: row.label_b }, value);
      }
    }
    const kinds = new Set([...byKind.reserved.keys(), ...byKind.pending.keys(), ...byKind.refunded.keys()]);
    for (const kind of kinds) {
      const [r, p, f] = [byKind.reserved, byKind.pending, byKind.refunded].map((map) => map.get(kind) ?? 0);
      reserved.set({ kind }, r!);
      pending.set({ kind }, p!);
      refunded.set({ kind }, f!);
      charged.set({ kind }, Math.max(0, r! - p! - f!));
    }
  }

  return {
    async text() {
      if (!taken || now() - taken.at >= LIMITS.metrics.snapshotCacheMs) {
        // Concurrent scrapes share one statement.
        inFlight ??= read().finally(() => {
          inFlight = undefined;
        });
        await inFlight;
      }
      if (!taken) return registry.getSingleMetricAsString('weft_metrics_snapshot_failures_total');
      publish(taken.rows);
      age.set((now() - taken.at) / 1000);
      return registry.metrics();
    },
  };
}
