// A run's steps (`run_steps`): planned at dispatch, appended by an llm agent or a decision, started
// and finished by the step executor under the run's lock (`lockExecution`, taken first as every writer
// of the run does).
import type { EntityManager } from 'typeorm';
import type { PolicyDecision } from '../approvals/rules';
import { affectedRows, queryFirst, queryRows } from '../platform/db/query';
import { NotFoundError } from '../platform/errors';
import type { StepEntryFields } from './audit';
import type { RunError } from './entities';
import { RunExecution, RunStep } from './entities';
import { appendEventsSql } from './event-repository';
import { lockExecution } from './execution-repository';

const executions = (m: EntityManager) => m.getRepository(RunExecution);
const steps = (m: EntityManager) => m.getRepository(RunStep);

/**
 * A step's first read in one statement (issue 27): its run (404 when unknown), the step (null when the
 * run has no such step) and the values of `also`, SQL expressions over the run's row (aliased `run`)
 * that its transaction needs besides: the approval rules' current row, whether its identity is live.
 */
export async function findRunAndStep<K extends string>(
  m: EntityManager,
  executionId: string,
  stepNo: number,
  also: Partial<Record<K, string>> = {},
): Promise<{ run: RunExecution; step: RunStep | null; also: Partial<Record<K, unknown>> }> {
  const query = executions(m)
    .createQueryBuilder('run')
    .leftJoinAndMapOne('run.contextStep', RunStep, 'step', 'step.execution_id = run.id AND step.step_no = :stepNo', {
      stepNo,
    })
    .where('run.id = :executionId', { executionId });
  for (const [name, sql] of Object.entries(also)) query.addSelect(sql as string, `also_${name}`);
  const { entities, raw } = await query.getRawAndEntities();
  const found = entities[0] as (RunExecution & { contextStep?: RunStep }) | undefined;
  if (!found) throw new NotFoundError({ error: 'run_not_found', execution_id: executionId });
  const { contextStep, ...run } = found;
  const row = raw[0] as Record<string, unknown>;
  return {
    run: Object.assign(new RunExecution(), run),
    step: contextStep ?? null,
    also: Object.fromEntries(Object.keys(also).map((name) => [name, row[`also_${name}`] ?? null])) as Partial<
      Record<K, unknown>
    >,
  };
}

export interface PlannedStep {
  tool: string;
  input: Record<string, unknown>;
  requiresApproval: boolean;
}

export async function insertSteps(
  m: EntityManager,
  workspaceId: string,
  executionId: string,
  planned: readonly PlannedStep[],
): Promise<void> {
  await steps(m).save(
    planned.map((step, stepNo) =>
      steps(m).create({
        workspaceId,
        executionId,
        stepNo,
        kind: 'TOOL' as const,
        tool: step.tool,
        input: step.input,
        requiresApproval: step.requiresApproval,
        status: 'PENDING' as const,
        creditsCharged: 0,
      }),
    ),
  );
}

export const stepsOf = (m: EntityManager, executionId: string) =>
  steps(m).find({ where: { executionId }, order: { stepNo: 'ASC' } });

export const findStep = (m: EntityManager, executionId: string, stepNo: number) =>
  steps(m).findOneBy({ executionId, stepNo });

/**
 * PENDING → RUNNING under the run's lock (taken first, as every writer of the run does), with the
 * step's `step.started` event; a step already running (a retried attempt) is left as it is.
 */
export async function markStepRunning(
  m: EntityManager,
  executionId: string,
  stepNo: number,
  decision?: PolicyDecision,
): Promise<void> {
  // One statement: the run's lock, the step's update (with the rules' decision when it was just taken,
  // recorded once as recordPolicyDecision does) and its `step.started` event (issue 27).
  await queryRows(
    m,
    appendEventsSql(
      '$1::uuid',
      `locked AS (SELECT id FROM run_executions WHERE id = $1::uuid FOR NO KEY UPDATE),
       started AS (
         UPDATE run_steps s SET status = 'RUNNING', started_at = coalesce(s.started_at, now()),
           policy_decision = coalesce(s.policy_decision, $3::jsonb)
         FROM locked WHERE s.execution_id = locked.id AND s.step_no = $2::int AND s.status = 'PENDING'
         RETURNING s.id, s.tool
       ),
       e AS (
         SELECT 1 AS ord, 'step.started'::text AS type,
           jsonb_build_object('step_no', $2::int, 'step_id', started.id, 'tool', started.tool) AS data,
           NULL::int AS audit_seq, NULL::text AS audit_hash
         FROM started
       )`,
    ),
    [executionId, stepNo, decision ? JSON.stringify(decision) : null],
  );
}

/**
 * Finishes a step under the run's lock (the audit chain's, taken first as every appender does) and
 * answers the columns its chain link covers, as stored: one statement where a lock, an update and a
 * read were three. Raw SQL: the entity's update type cannot take an arbitrary JSON output. Only a
 * step not yet finished moves (M-7): when overlapping attempts both finish, the first wins and the
 * later one gets null, so the step's chain link is written once and never goes stale.
 */
export async function completeStepLocked(
  m: EntityManager,
  executionId: string,
  stepNo: number,
  outcome: {
    status: 'SUCCEEDED' | 'FAILED' | 'SKIPPED';
    output: unknown;
    error: RunError | null;
    creditsCharged: number;
  },
): Promise<StepEntryFields | null> {
  const row = await queryFirst<{
    id: string;
    step_no: number;
    kind: RunStep['kind'];
    tool: string;
    input: Record<string, unknown>;
    status: RunStep['status'];
    output: unknown;
    error: RunError | null;
    credits_charged: number;
    supersedes_step_id: string | null;
    policy_decision: PolicyDecision | null;
  }>(
    m,
    `WITH run AS (SELECT id FROM run_executions WHERE id = $1 FOR NO KEY UPDATE)
     UPDATE run_steps s SET status = $3, output = $4, error = $5, credits_charged = $6, finished_at = now()
     FROM run WHERE s.execution_id = run.id AND s.step_no = $2 AND s.status IN ('PENDING', 'RUNNING')
     RETURNING s.id, s.step_no, s.kind, s.tool, s.input, s.status, s.output, s.error, s.credits_charged,
       s.supersedes_step_id, s.policy_decision`,
    [
      executionId,
      stepNo,
      outcome.status,
      JSON.stringify(outcome.output ?? null),
      outcome.error ? JSON.stringify(outcome.error) : null,
      outcome.creditsCharged,
    ],
  );
  if (!row) return null;
  return {
    id: row.id,
    stepNo: row.step_no,
    kind: row.kind,
    tool: row.tool,
    input: row.input,
    status: row.status,
    output: row.output,
    error: row.error,
    creditsCharged: row.credits_charged,
    supersedesStepId: row.supersedes_step_id,
    policyDecision: row.policy_decision,
  };
}

/**
 * Records what the approval rules decided for a step, once: a retried decision finds the first one
 * (a policy changed meanwhile never changes it). Answers the decision that stands.
 */
export async function recordPolicyDecision(
  m: EntityManager,
  executionId: string,
  stepNo: number,
  decision: PolicyDecision,
): Promise<PolicyDecision> {
  const row = await queryFirst<{ policy_decision: PolicyDecision }>(
    m,
    `UPDATE run_steps SET policy_decision = coalesce(policy_decision, $3)
     WHERE execution_id = $1 AND step_no = $2 RETURNING policy_decision`,
    [executionId, stepNo, JSON.stringify(decision)],
  );
  return row?.policy_decision ?? decision;
}

/** The step runs with the reviewer's edit of its input (issue 32 part 2); only a step not yet started. */
export const editStepInput = (m: EntityManager, executionId: string, stepNo: number, input: Record<string, unknown>) =>
  affectedRows(m, `UPDATE run_steps SET input = $3 WHERE execution_id = $1 AND step_no = $2 AND status = 'PENDING'`, [
    executionId,
    stepNo,
    JSON.stringify(input),
  ]);

export const stepsByIds = (m: EntityManager, ids: string[]) =>
  ids.length === 0 ? Promise.resolve([]) : steps(m).find({ where: ids.map((id) => ({ id })) });

export const findStepById = (m: EntityManager, id: string) => steps(m).findOneBy({ id });

/** The next step number of a run (decisions come after the planned steps). */
export async function nextStepNo(m: EntityManager, executionId: string): Promise<number> {
  const last = await steps(m).findOne({ where: { executionId }, order: { stepNo: 'DESC' } });
  return last ? last.stepNo + 1 : 0;
}

/** Locks the run row (the chain's lock), then appends `fields` as the run's next step. */
async function appendStep(
  m: EntityManager,
  executionId: string,
  fields: Omit<Partial<RunStep>, 'executionId' | 'stepNo'>,
): Promise<RunStep> {
  await lockExecution(m, executionId);
  const stepNo = await nextStepNo(m, executionId);
  return steps(m).save(
    steps(m).create({ creditsCharged: 0, superseded: false, supersedesStepId: null, ...fields, executionId, stepNo }),
  );
}

/** Inserts a decision as the run's next step: it is done the moment it is recorded. */
export function insertDecisionLocked(
  m: EntityManager,
  row: { workspaceId: string; executionId: string; input: Record<string, unknown>; supersedes: string | null },
): Promise<RunStep> {
  const now = new Date();
  return appendStep(m, row.executionId, {
    workspaceId: row.workspaceId,
    kind: 'DECISION',
    tool: 'agent.record_decision',
    input: row.input,
    requiresApproval: false,
    status: 'SUCCEEDED',
    supersedesStepId: row.supersedes,
    startedAt: now,
    finishedAt: now,
  });
}

/** Appends a step the llm agent chose (PENDING), or its refused call (FAILED, with the error fed back). */
export function insertChosenStep(
  m: EntityManager,
  row: {
    workspaceId: string;
    executionId: string;
    tool: string;
    input: Record<string, unknown>;
    requiresApproval: boolean;
    error: RunError | null;
  },
): Promise<RunStep> {
  const now = new Date();
  return appendStep(m, row.executionId, {
    workspaceId: row.workspaceId,
    kind: 'TOOL',
    tool: row.tool,
    input: row.input,
    requiresApproval: row.requiresApproval,
    status: row.error ? 'FAILED' : 'PENDING',
    error: row.error,
    ...(row.error ? { startedAt: now, finishedAt: now } : {}),
  });
}

export const markSuperseded = (m: EntityManager, stepId: string) =>
  steps(m).update({ id: stepId }, { superseded: true });

export const decisionsOf = (m: EntityManager, executionId: string, headOnly: boolean) =>
  steps(m).find({
    where: { executionId, kind: 'DECISION', ...(headOnly ? { superseded: false } : {}) },
    order: { stepNo: 'ASC' },
  });
