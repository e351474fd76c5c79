import type { WorkflowExecutionStatusName } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { forEachWorkspace } from '../platform/workspace-sweep';
import { workspaceIdsAfter } from '../tenancy/repository';
import { runStartInput } from './events';
import type { UnfinishedRun } from './execution-repository';
import { cancelExecution, finishExecution, recordFinished, unfinishedRuns } from './execution-repository';
import { releaseStranded } from './priority-gate';
import type { RunReconcileResult, RunWorkflowInput } from './workflow';
import { runWorkflow, runWorkflowId } from './workflow';

const WORKSPACE_BATCH = 500;
const CANDIDATES_PER_WORKSPACE = 1000;

/** What Temporal says of `run-<id>`; GONE when it has no execution (never started, or past retention). */
type ExecutionStatus = WorkflowExecutionStatusName | 'GONE';

// The memo a resumed execution carries, so a second loss of the same run is settled, not looped.
const RESUMED_MEMO = 'weftResumedByReconciler';

/**
 * The run reconciler (issue 24, H-4): Postgres says which runs are unfinished, Temporal whether
 * each still has a live `run-<id>`. A run whose workflow closed without finishing its row (an
 * older build that failed on an outage, a crash past the retries, a termination) or never started
 * (its start and its outbox event both lost) gets a new execution under the same id: it re-reads
 * the plan, finds each step already done by its row, replays nothing, and waits on or applies the
 * approval that is recorded (a resolve whose signal went to the closed workflow). A run whose
 * resumed execution closed unfinished too is settled FAILED (`run_abandoned`), with the charges of
 * the steps it ran, rather than restarted for ever; one whose workflow was cancelled in Temporal is
 * settled CANCELLED. Every step is idempotent, so overlapping passes are harmless. Last, each
 * workspace's priority gate lets go the held runs it has room for, should a release have been lost.
 */
export function createRunReconciler(deps: {
  dataSource: DataSource;
  uow: UnitOfWork;
  temporal: TemporalHandle;
  logger: Logger;
  /** Kicked after settling a run: its slot may have gone to a waiting run, its callbacks were queued (issue 26). */
  outbox?: Pick<OutboxRelay, 'kick'>;
  approvalRecheckSeconds: number;
  approvalRechecksPerRun: number;
}) {
  const { dataSource, uow, temporal, logger } = deps;

  async function execution(workflowId: string): Promise<{ status: ExecutionStatus; resumed: boolean }> {
    try {
      const described = await temporal.client.workflow.getHandle(workflowId).describe();
      return { status: described.status.name, resumed: Boolean(described.memo?.[RESUMED_MEMO]) };
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return { status: 'GONE', resumed: false };
      throw error;
    }
  }

  /** A new execution of the run under its id, allowed although an earlier one closed. */
  async function restart(workspaceId: string, run: UnfinishedRun): Promise<boolean> {
    // The same start input as the dispatch's event would give (src/runs/events.ts).
    const input = runStartInput(workspaceId, {
      execution_id: run.id,
      agent: run.agent,
      step_count: run.step_count,
      priority: run.priority,
      ...(run.goal ? { goal: run.goal.slice(0, 100) } : {}),
      ...(run.tags.length ? { tags: run.tags } : {}),
      approval_recheck_seconds: deps.approvalRecheckSeconds,
      approval_rechecks_per_run: deps.approvalRechecksPerRun,
    });
    try {
      await temporal.client.workflow.start<(input: RunWorkflowInput) => Promise<unknown>>(runWorkflow.type, {
        ...temporal.workflows.options(runWorkflow, [input] as [RunWorkflowInput]),
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        memo: { [RESUMED_MEMO]: true },
      });
      return true;
    } catch (error) {
      // Started meanwhile (the outbox's start, another pass): it is live, which is what was wanted.
      if (error instanceof WorkflowExecutionAlreadyStartedError) return false;
      throw error;
    }
  }

  /** One row: left alone, resumed or settled. */
  async function reconcile(workspaceId: string, run: UnfinishedRun): Promise<'running' | 'resumed' | 'settled'> {
    const { status, resumed: resumedBefore } = await execution(runWorkflowId(run.id));
    if (status === 'RUNNING') return 'running';
    if (status === 'CANCELLED' || resumedBefore) {
      const message = 'The run stopped twice without finishing; it was ended rather than restarted again';
      await uow({ workspaceId }, async (m) => {
        if (status !== 'CANCELLED') {
          await finishExecution(m, run.id, {
            status: 'FAILED',
            output: null,
            error: { code: 'run_abandoned', message, step: null },
          });
        } else if (await cancelExecution(m, run.id)) await recordFinished(m, run.id);
      });
      logger.warn({ workspace_id: workspaceId, execution_id: run.id, workflow: status }, 'settled a stranded run');
      // A slot it held went to a waiting run, and its run.finished callbacks were queued: both leave now.
      deps.outbox?.kick(workspaceId);
      return 'settled';
    }
    const resumed = await restart(workspaceId, run);
    if (resumed) {
      logger.warn({ workspace_id: workspaceId, execution_id: run.id, workflow: status }, 'resumed a stranded run');
    }
    return resumed ? 'resumed' : 'running';
  }

  const emptyResult = (): RunReconcileResult => ({
    checked: 0,
    running: 0,
    resumed: 0,
    settled: 0,
    failed: 0,
    resumedIds: [],
    settledIds: [],
  });

  /** One workspace's unfinished runs older than `minAgeSeconds`, added to `result`. */
  async function reconcileWorkspace(
    workspaceId: string,
    minAgeSeconds: number,
    result: RunReconcileResult = emptyResult(),
  ): Promise<RunReconcileResult> {
    const runs = await uow({ workspaceId }, (m) => unfinishedRuns(m, minAgeSeconds, CANDIDATES_PER_WORKSPACE));
    for (const run of runs) {
      result.checked += 1;
      try {
        const outcome = await reconcile(workspaceId, run);
        result[outcome] += 1;
        if (outcome === 'resumed' && result.resumedIds.length < 100) result.resumedIds.push(run.id);
        if (outcome === 'settled' && result.settledIds.length < 100) result.settledIds.push(run.id);
      } catch (error) {
        result.failed += 1;
        logger.warn({ err: error, workspace_id: workspaceId, execution_id: run.id }, 'run reconcile failed');
      }
    }
    await releaseAtGate(workspaceId);
    return result;
  }

  /** Issue 43 item 2: the runs held at the priority gate that the workspace has room for (a release lost). */
  async function releaseAtGate(workspaceId: string): Promise<void> {
    try {
      const released = await uow({ workspaceId }, (m) => releaseStranded(m, workspaceId));
      if (released.length === 0) return;
      logger.warn({ workspace_id: workspaceId, released: released.length }, 'released runs held at the priority gate');
      deps.outbox?.kick(workspaceId);
    } catch (error) {
      logger.warn({ err: error, workspace_id: workspaceId }, 'priority gate not released; the next pass tries again');
    }
  }

  /** Every workspace, in batches; `onProgress` between workspaces (the activity heartbeats). */
  async function reconcileAll(input: { minAgeSeconds: number }, onProgress: () => void = () => {}) {
    const result = emptyResult();
    await forEachWorkspace(
      {
        job: 'run reconcile',
        page: (after) => workspaceIdsAfter(dataSource, after, WORKSPACE_BATCH),
        heartbeat: () => onProgress(),
        warn: (fields, message) => logger.warn(fields, message),
      },
      (workspaceId) => reconcileWorkspace(workspaceId, input.minAgeSeconds, result),
    );
    if (result.resumed + result.settled + result.failed > 0) logger.warn(result, 'run reconciler pass');
    return result;
  }

  return { reconcileWorkspace, reconcileAll };
}

export type RunReconciler = ReturnType<typeof createRunReconciler>;
