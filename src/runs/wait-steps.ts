// A wait tool's step (issue 40 item 3; the tools and their waitpoints: waitpoints.ts): held on its
// waitpoint when its call comes back, then settled with the waitpoint's outcome. The run workflow's
// wait (`workflows/run-waits.ts`) drives the activities below.
import type { EntityManager } from 'typeorm';
import { iso } from '../platform/dates';
import { affectedRows } from '../platform/db/query';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { NotFoundError } from '../platform/errors';
import type { RunError, RunExecution, RunStatus, RunStep } from './entities';
import { FINISHED_STATUSES } from './entities';
import * as executionRepo from './execution-repository';
import type { StepCompleter, StepCompletion } from './step-completion';
import * as stepRepo from './step-repository';
import type { StepOutcome } from './step-runner';
import { endWaits, recordWaitpointCreated, recordWaitpointSettled } from './waitpoint-events';
import type { WaitpointRow } from './waitpoint-repository';
import * as waitRepo from './waitpoint-repository';
import { runOutcomeOf } from './waitpoints';

const isFinished = (status: RunStatus) => FINISHED_STATUSES.includes(status);

type Ref = { workspaceId: string; executionId: string; stepNo: number };

/** The waitpoint as the run's wait reads it: its status, when it expires, and the run's own status. */
export interface WaitState {
  status: WaitpointRow['status'];
  expiresAt: string | null;
  run: RunStatus;
}

/** A settle in a transaction: the step's outcome, and what its completion committed (for after the commit). */
interface Settled {
  outcome: StepOutcome;
  completed?: StepCompletion;
}

/**
 * In a transaction that locked the step's run: its waitpoint, completed first when it is a `runs.wait`
 * whose run has finished (a re-check, or a run that finished before the wait began), without a signal:
 * the caller reads the outcome itself.
 */
async function currentWaitpoint(m: EntityManager, ref: Ref, found?: WaitpointRow): Promise<WaitpointRow | undefined> {
  const wp = found ?? (await waitRepo.findWaitpointOfStep(m, ref.executionId, ref.stepNo));
  if (wp?.kind !== 'run' || wp.status !== 'waiting' || !wp.awaited_execution_id) return wp;
  const awaited = await executionRepo.mustFindExecution(m, wp.awaited_execution_id);
  if (!isFinished(awaited.status)) return wp;
  const done = await waitRepo.settleWaitpoint(m, wp.id, 'completed', runOutcomeOf(awaited));
  if (!done) return wp;
  await recordWaitpointSettled(m, done, false);
  return done;
}

/** The step's output once its wait is over: what it showed while waiting, completed (never the token again). */
function finalOutput(wp: WaitpointRow, interim: Record<string, unknown>): unknown {
  const completedAt = wp.completed_at ? iso(wp.completed_at) : null;
  if (wp.kind === 'run') return { ...(wp.output as Record<string, unknown>), waitpoint_id: wp.id };
  if (wp.kind === 'sleep') return { ...interim, status: 'completed', woke_at: completedAt };
  return { ...interim, token: null, status: 'completed', output: wp.output ?? null, completed_at: completedAt };
}

/** What the step recorded, as its outcome (a cancel of the run, or an earlier attempt, settled it). */
function recorded(step: RunStep, run: RunExecution, finish: boolean): StepOutcome {
  if (step.status === 'FAILED') return { status: 'FAILED', error: step.error ?? undefined };
  if (step.status === 'SUCCEEDED') return { status: 'SUCCEEDED', ...(finish ? { run: run.status } : {}) };
  return { status: 'CANCELLED' };
}

/** The wait steps: holding a step on its waitpoint, and the run workflow's activities over it. */
export function createWaitSteps(deps: { uow: UnitOfWork; completion: StepCompleter }) {
  const { uow, completion } = deps;

  /**
   * In a transaction that locked and read the run, its waitpoint no longer waiting (or the run ended):
   * the step completes with the waitpoint's outcome (a timeout fails it with `waitpoint_timeout`), the
   * run goes on RUNNING (or, `finish`, ends with it).
   */
  async function settleIn(
    m: EntityManager,
    ref: Ref,
    run: RunExecution,
    wp: WaitpointRow,
    finish: boolean,
  ): Promise<Settled> {
    const { workspaceId, executionId, stepNo } = ref;
    const step = await stepRepo.findStep(m, executionId, stepNo);
    if (!step) throw new NotFoundError({ error: 'waitpoint_not_found', step: stepNo });
    if (step.status !== 'RUNNING' || isFinished(run.status) || wp.status === 'cancelled') {
      return { outcome: recorded(step, run, finish) };
    }
    if (wp.status === 'waiting') throw new Error(`waitpoint ${wp.id} is still waiting`);
    if (wp.status === 'completed' && !finish) await executionRepo.setStatus(m, executionId, 'RUNNING', 'WAITING');
    const failure: RunError = {
      code: 'waitpoint_timeout',
      message: `The waitpoint ${wp.name ?? wp.id} was not completed in time`,
      step: stepNo,
    };
    const interim = (step.output ?? {}) as Record<string, unknown>;
    const end =
      wp.status === 'completed'
        ? { status: 'SUCCEEDED' as const, output: finalOutput(wp, interim), error: null, creditsCharged: 0 }
        : { status: 'FAILED' as const, output: null, error: failure, creditsCharged: 0 };
    const completed = await completion.within(m, workspaceId, executionId, stepNo, end, finish);
    if (!completed) return { outcome: recorded((await stepRepo.findStep(m, executionId, stepNo))!, run, finish) };
    const outcome: StepOutcome =
      end.status === 'FAILED' ? { status: 'FAILED', error: failure } : { status: 'SUCCEEDED' };
    return { outcome, completed };
  }

  /** After the commit of a settle: what its completion starts (a finished run's waiters, its callbacks). */
  const answer = (ref: Ref, settled: Settled): StepOutcome =>
    settled.completed
      ? { ...settled.outcome, ...completion.after(ref.workspaceId, settled.completed) }
      : settled.outcome;

  /** The waitpoint as the wait reads it (its `runs.wait` completed here when its run has finished). */
  const state = (ref: Ref): Promise<WaitState> =>
    uow({ workspaceId: ref.workspaceId }, async (m) => {
      await executionRepo.lockExecution(m, ref.executionId);
      const run = await executionRepo.mustFindExecution(m, ref.executionId);
      const wp = await currentWaitpoint(m, ref);
      if (!wp) throw new NotFoundError({ error: 'waitpoint_not_found', step: ref.stepNo });
      return { status: wp.status, expiresAt: wp.expires_at ? iso(wp.expires_at) : null, run: run.status };
    });

  /**
   * The wait is over (or its run ended): the step settled, in one transaction. Safe to repeat: a step
   * settled already answers what it recorded.
   */
  async function settleWaitStep(ref: Ref, finish = false): Promise<StepOutcome> {
    const settled = await uow({ workspaceId: ref.workspaceId }, async (m) => {
      await executionRepo.lockExecution(m, ref.executionId);
      const run = await executionRepo.mustFindExecution(m, ref.executionId);
      const wp = await waitRepo.findWaitpointOfStep(m, ref.executionId, ref.stepNo);
      if (!wp) throw new NotFoundError({ error: 'waitpoint_not_found', step: ref.stepNo });
      return settleIn(m, ref, run, wp, finish);
    });
    return answer(ref, settled);
  }

  /**
   * A wait tool's call came back: the run shows the step's first output (an event waitpoint's token,
   * once) and records `waitpoint.created`. A waitpoint no longer waiting (a `runs.wait` whose run had
   * finished) settles the step at once, in this transaction: the run never waits. Else the run goes
   * WAITING, for the workflow to wait on it. A retry after this committed changes nothing.
   */
  async function hold(ref: Ref, result: unknown, finish = false): Promise<StepOutcome> {
    const { workspaceId, executionId, stepNo } = ref;
    const settled = await uow({ workspaceId }, async (m): Promise<Settled> => {
      await executionRepo.lockExecution(m, executionId);
      const run = await executionRepo.mustFindExecution(m, executionId);
      if (isFinished(run.status)) {
        // Made after its run finished (a cancel while the step's call ran): it ends at once.
        await endWaits(m, executionId, stepNo);
        return { outcome: { status: 'CANCELLED' } };
      }
      const shown = await affectedRows(
        m,
        `UPDATE run_steps SET output = $3 WHERE execution_id = $1 AND step_no = $2 AND status = 'RUNNING'
           AND output IS NULL`,
        [executionId, stepNo, JSON.stringify(result ?? null)],
      );
      const made = await waitRepo.findWaitpointOfStep(m, executionId, stepNo);
      const token = (result as { token?: unknown } | null)?.token;
      if (shown && made) await recordWaitpointCreated(m, made, typeof token === 'string' ? token : null);
      const wp = made && (await currentWaitpoint(m, ref, made));
      if (wp && wp.status !== 'waiting') return settleIn(m, ref, run, wp, finish);
      await executionRepo.setStatus(m, executionId, 'WAITING', 'RUNNING');
      // What the wait's first read would find, which it need not make: a completion after this commit
      // signals the run (a `runs.wait`'s too: its run's finish sees the waitpoint, beginWait, and WAITING).
      const held: WaitState | undefined = wp && {
        status: wp.status,
        expiresAt: wp.expires_at ? iso(wp.expires_at) : null,
        run: 'WAITING',
      };
      return { outcome: { status: 'WAITING', ...(held ? { wait: held } : {}) } };
    });
    return answer(ref, settled);
  }

  return {
    hold,
    /** The run workflow's activities (`workflows/run-waits.ts`). */
    steps: {
      waitpointState: state,

      /** Its time has come (on the database's clock): a sleep is over, any other wait timed out. */
      async expireWaitpoint(ref: Ref) {
        await uow({ workspaceId: ref.workspaceId }, async (m) => {
          await executionRepo.lockExecution(m, ref.executionId);
          const wp = await waitRepo.findWaitpointOfStep(m, ref.executionId, ref.stepNo);
          if (wp?.status !== 'waiting') return;
          const kind = wp.kind === 'sleep' ? 'completed' : 'timed_out';
          const done = await waitRepo.settleWaitpoint(m, wp.id, kind, null, null, true);
          if (done) await recordWaitpointSettled(m, done, false);
        });
        return state(ref);
      },

      settleWaitStep,

      /**
       * The waitpoint read as `waitpointState` reads it and, when the wait is over (or the run ended), the
       * step settled in the same transaction, its outcome answered: the wait needs no `settleWaitStep`.
       */
      async readWaitStep(ref: Ref, finish = false): Promise<{ state: WaitState; outcome?: StepOutcome }> {
        const read = await uow({ workspaceId: ref.workspaceId }, async (m) => {
          await executionRepo.lockExecution(m, ref.executionId);
          const run = await executionRepo.mustFindExecution(m, ref.executionId);
          const wp = await currentWaitpoint(m, ref);
          if (!wp) throw new NotFoundError({ error: 'waitpoint_not_found', step: ref.stepNo });
          const seen = { status: wp.status, expiresAt: wp.expires_at ? iso(wp.expires_at) : null, run: run.status };
          if (wp.status === 'waiting' && !isFinished(run.status)) return { state: seen };
          return { state: seen, settled: await settleIn(m, ref, run, wp, finish) };
        });
        return read.settled ? { state: read.state, outcome: answer(ref, read.settled) } : { state: read.state };
      },
    },
  };
}
