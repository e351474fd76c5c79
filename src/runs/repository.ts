// Over 400 lines on purpose: one repository for the run aggregate. Executions, steps, approvals and
// the audit chain serialize on one lock (the run row, `lockExecution`) and share the guard that no
// write leaves a finished run (`UNFINISHED`); cut by table, each part would need both again.
import type { EntityManager } from 'typeorm';
import type { RunApproval } from '../approvals/entities';
import * as approvalsRepo from '../approvals/repository';
import { RUN_UNFINISHED } from '../approvals/repository';
import type { PolicyDecision } from '../approvals/rules';
import { canonicalJson } from '../capabilities/idempotency';
import { affectedRows, queryFirst, queryRows } from '../platform/db/query';
import { NotFoundError } from '../platform/errors';
import type { StepEntryFields } from './audit';
import { GENESIS_HASH } from './audit';
import type { FinishedRunRow } from './callbacks';
import { callbackRunFinished } from './callbacks';
import { finishingWithKey } from './concurrency';
import type { AuditKind, RunError, RunPrincipal, RunStatus } from './entities';
import { RunAuditLink, RunExecution, RunStep } from './entities';
import type { AuditRef } from './run-events';
import { appendEventsSql, recordRunEvent } from './run-events';

const executions = (m: EntityManager) => m.getRepository(RunExecution);
const steps = (m: EntityManager) => m.getRepository(RunStep);
const audit = (m: EntityManager) => m.getRepository(RunAuditLink);

// A transition never leaves a finished run: every status write below carries this condition (an
// approval's decision too, which is why it is declared in src/approvals, below runs).
const UNFINISHED = RUN_UNFINISHED;

export interface NewExecution {
  workspaceId: string;
  userId: string;
  agent: 'playbook' | 'llm';
  input: Record<string, unknown>;
  principal: RunPrincipal;
  idempotencyKey: string | null;
  requestHash: string;
  scheduleId?: string | null;
}

/**
 * Inserts the execution, or nothing when its idempotency key is taken (raw SQL for the partial
 * unique index's ON CONFLICT, which waits for a concurrent holder to commit). Null when taken.
 */
/** The new run's ids; null when the idempotency key is taken. */
export async function insertExecution(
  m: EntityManager,
  row: NewExecution,
): Promise<{ id: string; runId: string } | null> {
  const inserted = await queryFirst<{ id: string; run_id: string }>(
    m,
    `INSERT INTO run_executions
       (workspace_id, user_id, agent, input, principal, idempotency_key, request_hash, schedule_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (workspace_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
     RETURNING id, run_id`,
    [
      row.workspaceId,
      row.userId,
      row.agent,
      JSON.stringify(row.input),
      JSON.stringify(row.principal),
      row.idempotencyKey,
      row.requestHash,
      row.scheduleId ?? null,
    ],
  );
  return inserted ? { id: inserted.id, runId: inserted.run_id } : null;
}

export const findExecutionByKey = (m: EntityManager, idempotencyKey: string) =>
  executions(m).findOneBy({ idempotencyKey });

export const findExecution = (m: EntityManager, id: string) => executions(m).findOneBy({ id });

/** The execution, or the 404 an unknown run (or another workspace's) answers with. */
export async function mustFindExecution(m: EntityManager, id: string): Promise<RunExecution> {
  const run = await findExecution(m, id);
  if (!run) throw new NotFoundError({ error: 'run_not_found', execution_id: id });
  return run;
}

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
 * Moves an unfinished run to `status` and records its `run.status` event; false when it had
 * finished (a cancel won the race) or was in `status` already (no event then).
 */
export async function setStatus(m: EntityManager, id: string, status: RunStatus, from?: RunStatus): Promise<boolean> {
  const moved =
    (await affectedRows(
      m,
      `UPDATE run_executions SET status = $2, updated_at = now() WHERE id = $1 AND ${UNFINISHED}
       AND ($3::text IS NULL OR status = $3) AND status <> $2`,
      [id, status, from ?? null],
    )) > 0;
  if (moved) await recordRunEvent(m, id, { type: 'run.status', data: { status } });
  return moved;
}

/** The `run.finished` event of a run that has just ended, from its row as it now reads. */
export async function recordFinished(m: EntityManager, id: string): Promise<void> {
  const run = await mustFindExecution(m, id);
  await recordRunEvent(m, id, {
    type: 'run.finished',
    data: {
      status: run.status,
      output: run.output ?? null,
      error: run.error ?? null,
      credits_charged: run.creditsCharged,
    },
  });
}

/** What the finishing statements return: the row a `run.finished` callback reports. */
const FINISHED_ROW = `RETURNING id, workspace_id, agent, status, error, output, credits_charged, finished_at`;

/**
 * Ends an unfinished run with its output or error and the sum of its steps' charges, records its
 * `run.status` and `run.finished` events (one statement for both) and queues its `run.finished`
 * callbacks; a run with a concurrency key hands its slot on in the same transaction (`concurrency.ts`).
 */
export async function finishExecution(
  m: EntityManager,
  id: string,
  outcome: { status: 'SUCCEEDED' | 'FAILED'; output: unknown; error: RunError | null },
): Promise<boolean> {
  const { finished } = await finishingWithKey(m, id, async () => {
    const ended = await queryFirst<FinishedRunRow>(
      m,
      `UPDATE run_executions SET status = $2, output = $3, error = $4, updated_at = now(), finished_at = now(),
         credits_charged = (SELECT coalesce(sum(credits_charged), 0) FROM run_steps WHERE execution_id = $1)
       WHERE id = $1 AND ${UNFINISHED} ${FINISHED_ROW}`,
      [
        id,
        outcome.status,
        JSON.stringify(outcome.output ?? null),
        outcome.error ? JSON.stringify(outcome.error) : null,
      ],
    );
    if (!ended) return false;
    await recordRunEvent(
      m,
      id,
      { type: 'run.status', data: { status: outcome.status } },
      {
        type: 'run.finished',
        data: {
          status: outcome.status,
          output: outcome.output ?? null,
          error: outcome.error,
          credits_charged: Number(ended.credits_charged),
        },
      },
    );
    await callbackRunFinished(m, ended);
    return true;
  });
  return finished;
}

/**
 * Cancels an unfinished run, its pending approvals and its steps not yet started, records its
 * `run.status` event and queues its callbacks; the caller records `run.finished` (`recordFinished`)
 * once the cancelled approvals' own events are written, so the stream's last event stays the last.
 * Its concurrency slot goes to the oldest waiting run unless `releaseSlot` is false (a
 * `cancel_previous` dispatch, which takes the slot itself).
 */
export async function cancelExecution(m: EntityManager, id: string, releaseSlot = true): Promise<boolean> {
  let cancelled: FinishedRunRow | undefined;
  await finishingWithKey(
    m,
    id,
    async () => {
      cancelled = await queryFirst<FinishedRunRow>(
        m,
        `UPDATE run_executions SET status = 'CANCELLED', updated_at = now(), finished_at = now(), held_start = NULL,
           credits_charged = (SELECT coalesce(sum(credits_charged), 0) FROM run_steps WHERE execution_id = $1)
         WHERE id = $1 AND ${UNFINISHED} ${FINISHED_ROW}`,
        [id],
      );
      return cancelled !== undefined;
    },
    releaseSlot,
  );
  if (!cancelled) return false;
  await approvalsRepo.cancelPendingApprovals(m, id);
  await steps(m).update({ executionId: id, status: 'PENDING' }, { status: 'SKIPPED' });
  await recordRunEvent(m, id, { type: 'run.status', data: { status: 'CANCELLED' } });
  await callbackRunFinished(m, cancelled);
  return true;
}

/**
 * A step that lands after its run finished (a cancel while it ran): the run's total takes its
 * charge, so what the run reports is what its steps cost. An unfinished run is summed when it ends.
 * An assignment of the run row's update that records the step's event (recordRunEventSetting), so
 * it costs no statement of its own.
 */
export const SETTLE_FINISHED_CHARGES = `credits_charged = CASE WHEN ${UNFINISHED} THEN credits_charged
  ELSE (SELECT coalesce(sum(credits_charged), 0) FROM run_steps WHERE execution_id = run_executions.id) END`;

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

/**
 * The step's approval row, created PENDING on first request (the retried activity finds it), with
 * its `approval.requested` event when this call created it.
 */
export async function requestApproval(m: EntityManager, step: RunStep): Promise<RunApproval> {
  const { approval, created } = await approvalsRepo.requestApproval(m, step);
  if (created) {
    await recordRunEvent(m, step.executionId, {
      type: 'approval.requested',
      data: {
        approval_id: approval.id,
        step_no: approval.stepNo,
        tool: approval.tool,
        input: approval.input,
        ...(approval.approvers ? { approvers: approval.approvers } : {}),
        ...(approval.expiresAt ? { expires_at: approval.expiresAt.toISOString() } : {}),
      },
    });
  }
  return approval;
}

/**
 * AWAITING_APPROVAL (or already RUNNING: a retried or resumed transition) → RUNNING; false when the
 * run has finished. Raw SQL: the status condition, and the status before (locked), so only a real
 * change records its `run.status` event.
 */
export async function resumeExecution(m: EntityManager, id: string): Promise<boolean> {
  const row = await queryFirst<{ before: RunStatus }>(
    m,
    `UPDATE run_executions e SET status = 'RUNNING', updated_at = now()
     FROM (SELECT id, status FROM run_executions WHERE id = $1 FOR NO KEY UPDATE) b
     WHERE e.id = b.id AND b.status IN ('AWAITING_APPROVAL', 'RUNNING')
     RETURNING b.status AS before`,
    [id],
  );
  if (row?.before === 'AWAITING_APPROVAL') {
    await recordRunEvent(m, id, { type: 'run.status', data: { status: 'RUNNING' } });
  }
  return row !== undefined;
}

/** A run whose row says it is still going: what the reconciler needs to check and restart it. */
export interface UnfinishedRun {
  id: string;
  status: RunStatus;
  agent: 'playbook' | 'llm';
  goal: string | null;
  step_count: number;
  tags: string[];
}

/**
 * The scope's runs in QUEUED, RUNNING or AWAITING_APPROVAL not touched for `minAgeSeconds` (younger
 * ones belong to the API's start and the outbox), oldest first. Raw SQL: ages on the database's clock.
 */
export const unfinishedRuns = (m: EntityManager, minAgeSeconds: number, limit: number) =>
  queryRows<UnfinishedRun>(
    m,
    `SELECT e.id, e.status, e.agent, e.input->>'goal' AS goal, e.tags,
       (SELECT count(*)::int FROM run_steps s WHERE s.execution_id = e.id) AS step_count
     FROM run_executions e
     WHERE e.status IN ('QUEUED', 'RUNNING', 'AWAITING_APPROVAL') AND e.held_start IS NULL
       AND e.updated_at <= now() - make_interval(secs => $1)
     ORDER BY e.updated_at LIMIT $2`,
    [minAgeSeconds, limit],
  );

/** The step runs with the reviewer's edit of its input (issue 32 part 2); only a step not yet started. */
export const editStepInput = (m: EntityManager, executionId: string, stepNo: number, input: Record<string, unknown>) =>
  affectedRows(m, `UPDATE run_steps SET input = $3 WHERE execution_id = $1 AND step_no = $2 AND status = 'PENDING'`, [
    executionId,
    stepNo,
    JSON.stringify(input),
  ]);

/**
 * Newest first, keyset-paged on (created_at, id): raw SQL for the row comparison, which the query
 * builder cannot say.
 */
export const listExecutions = (
  m: EntityManager,
  query: {
    status?: RunStatus;
    agent?: string;
    tag?: string[];
    schedule_id?: string;
    limit: number;
    after?: { createdAt: string; id: string };
  },
) =>
  // created_at as text keeps its microseconds, which a JS Date would drop from the cursor.
  queryRows<{ id: string; created_at_text: string }>(
    m,
    `SELECT id, created_at::text AS created_at_text FROM run_executions
     WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR agent = $2)
       AND ($3::timestamptz IS NULL OR (created_at, id) < ($3::timestamptz, $4::uuid))
       AND ($6::text[] IS NULL OR tags @> $6::text[])
       AND ($7::uuid IS NULL OR schedule_id = $7)
     ORDER BY created_at DESC, id DESC LIMIT $5`,
    [
      query.status ?? null,
      query.agent ?? null,
      query.after?.createdAt ?? null,
      query.after?.id ?? null,
      query.limit,
      query.tag?.length ? query.tag : null,
      query.schedule_id ?? null,
    ],
  );

export const executionsByIds = (m: EntityManager, ids: string[]) =>
  ids.length === 0 ? Promise.resolve([]) : executions(m).find({ where: ids.map((id) => ({ id })) });

// Raw SQL: a plain row lock that lets the step and approval foreign keys through (FOR NO KEY UPDATE).
export const lockExecution = (m: EntityManager, executionId: string) =>
  queryRows(m, `SELECT id FROM run_executions WHERE id = $1 FOR NO KEY UPDATE`, [executionId]);

/**
 * Appends a link to the run's chain. The execution row is locked first, so the links of one run
 * are appended one at a time and each reads the head its predecessor wrote.
 */
export async function appendAudit(
  m: EntityManager,
  link: { workspaceId: string; executionId: string; kind: AuditKind; refId: string; entry: unknown },
): Promise<AuditRef> {
  await lockExecution(m, link.executionId);
  return appendAuditLocked(m, link);
}

/**
 * `appendAudit` for a caller that holds the run's lock already (taken in an earlier statement). One
 * statement reads the head and writes the link after it, hashing in Postgres exactly as `chainHash`
 * does (sha256 of the previous hash and the entry's canonical JSON, UTF-8), which verification recomputes.
 */
export async function appendAuditLocked(
  m: EntityManager,
  link: { workspaceId: string; executionId: string; kind: AuditKind; refId: string; entry: unknown },
): Promise<AuditRef> {
  const written = await queryFirst<AuditRef>(
    m,
    `WITH head AS (SELECT seq, hash::text AS hash FROM run_audit WHERE execution_id = $1 ORDER BY seq DESC LIMIT 1),
     prev AS (SELECT coalesce((SELECT seq + 1 FROM head), 0) AS seq, coalesce((SELECT hash FROM head), $5) AS hash)
     INSERT INTO run_audit (workspace_id, execution_id, seq, kind, ref_id, prev_hash, hash)
     SELECT $2, $1, prev.seq, $3, $4, prev.hash, encode(sha256(convert_to(prev.hash || $6::text, 'UTF8')), 'hex')
     FROM prev
     RETURNING seq, hash::text AS hash`,
    [link.executionId, link.workspaceId, link.kind, link.refId, GENESIS_HASH, canonicalJson(link.entry)],
  );
  return written!;
}

export const auditOf = (m: EntityManager, executionId: string) =>
  audit(m).find({ where: { executionId }, order: { seq: 'ASC' } });

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
