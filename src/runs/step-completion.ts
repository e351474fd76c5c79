import type { EntityManager } from 'typeorm';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { StepEntryFields } from './audit';
import { stepEntry } from './audit';
import * as auditRepo from './audit-repository';
import type { RunExecution, RunStatus } from './entities';
import type { AuditRef, RunEventInput } from './event-repository';
import { recordRunEventSetting } from './event-repository';
import * as executionRepo from './execution-repository';
import { recordRunSpan } from './run-span';
import * as stepRepo from './step-repository';
import type { WokenWaiter } from './waitpoint-events';
import type { WaiterWaker } from './wake';

/** A finished tool step's event (`step.completed` or `step.failed`), carrying its chain link. */
export const stepEvent = (step: StepEntryFields, audit: AuditRef): RunEventInput =>
  step.status === 'FAILED'
    ? {
        type: 'step.failed',
        data: { step_no: step.stepNo, step_id: step.id, tool: step.tool, error: step.error },
        audit,
      }
    : {
        type: 'step.completed',
        data: {
          step_no: step.stepNo,
          step_id: step.id,
          tool: step.tool,
          output: step.output ?? null,
          credits_charged: step.creditsCharged,
        },
        audit,
      };

export type StepEnd = Parameters<typeof stepRepo.completeStepLocked>[3];

/** What a step's completion committed: with `finish`, the run's status, and when it ended the run, whom to wake. */
export interface StepCompletion {
  run?: RunStatus;
  ended?: RunExecution;
  woken: WokenWaiter[];
}

/**
 * A step's end: its row, its link in the run's audit chain, its event and, for a playbook's last step
 * (`finish`), the run's end, in one transaction; then what follows the commit. `within` runs in the
 * caller's transaction (a wait step settled where its waitpoint is read, wait-steps.ts), `complete`
 * in one of its own; either is null when another attempt of the step finished it first.
 */
export function createStepCompletion(deps: {
  uow: UnitOfWork;
  /** Kicked after a step that finished its run, so its callbacks leave at once. */
  outbox?: Pick<OutboxRelay, 'kick'>;
  /** After a step that finished its run: wakes the runs waiting on it (`runs.wait`), then kicks the outbox. */
  wakeWaiters?: WaiterWaker;
}) {
  async function within(
    m: EntityManager,
    workspaceId: string,
    executionId: string,
    stepNo: number,
    outcome: StepEnd,
    finish = false,
  ): Promise<StepCompletion | null> {
    const step = await stepRepo.completeStepLocked(m, executionId, stepNo, outcome);
    if (!step) return null;
    const audit = await auditRepo.appendAuditLocked(m, {
      workspaceId,
      executionId,
      kind: 'TOOL',
      refId: step.id,
      entry: stepEntry(step),
    });
    // The step's event and, should a cancel have finished the run meanwhile, its charges: one statement.
    await recordRunEventSetting(m, executionId, executionRepo.SETTLE_FINISHED_CHARGES, [stepEvent(step, audit)]);
    if (!finish || step.status !== 'SUCCEEDED') return { woken: [] };
    const ended = await executionRepo.finishExecution(m, executionId, {
      status: 'SUCCEEDED',
      output: step.output ?? null,
      error: null,
    });
    const run = await executionRepo.mustFindExecution(m, executionId);
    return { run: run.status, ended: ended ? run : undefined, woken: ended?.woken ?? [] };
  }

  /**
   * After the commit: a finished run's waiting runs are woken and its callbacks leave (in the
   * background: the outbox has both should this process die first); the step that ended it writes its
   * span. Answers the run's status after a finish.
   */
  function after(workspaceId: string, completed: StepCompletion): { run?: RunStatus } {
    const { ended, woken, ...answer } = completed;
    if (answer.run && deps.wakeWaiters) void deps.wakeWaiters(workspaceId, woken);
    else if (answer.run) deps.outbox?.kick(workspaceId);
    if (ended) recordRunSpan(ended);
    return answer;
  }

  return {
    within,
    after,
    /** In a transaction of its own, then what follows the commit. */
    async complete(
      workspaceId: string,
      executionId: string,
      stepNo: number,
      outcome: StepEnd,
      finish = false,
    ): Promise<{ run?: RunStatus } | null> {
      const completed = await deps.uow({ workspaceId }, (m) =>
        within(m, workspaceId, executionId, stepNo, outcome, finish),
      );
      return completed ? after(workspaceId, completed) : null;
    },
  };
}

export type StepCompleter = ReturnType<typeof createStepCompletion>;
