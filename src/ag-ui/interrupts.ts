import type { Interrupt, ResumeEntry } from '@ag-ui/core';
import { z } from 'zod';
import type { ResolveApprovalRequest } from '../approvals/schemas';
import { BudgetLimits } from '../approvals/schemas';
import type { Scope, ScopedRead } from '../platform/db/unit-of-work';
import { NotFoundError, ValidationFailedError } from '../platform/errors';
import { LIMITS } from '../rules/limits';

/** The run events that ask for outside input: an AG-UI interrupt when what they ask for is still open. */
export const ASKING_EVENTS: Readonly<Record<string, 'approval' | 'waitpoint'>> = {
  'approval.requested': 'approval',
  'waitpoint.created': 'waitpoint',
};

/** The id of what a run event asks for (its approval's or its waitpoint's), if it asks. */
export const askedId = (type: string, data: Record<string, unknown>): string | undefined => {
  const kind = ASKING_EVENTS[type];
  if (kind === 'approval') return String(data.approval_id);
  // Only an `event` waitpoint (`run.wait_for`) is answered from outside; sleeps and `runs.wait` end by themselves.
  if (kind === 'waitpoint' && data.kind === 'event') return String(data.waitpoint_id);
  return undefined;
};

/** An approval or `run.wait_for` waitpoint of the run that is open now, as `pendingInputs` reads it. */
interface PendingInput {
  kind: 'approval' | 'waitpoint';
  id: string;
  step_no: number;
  tool: string;
  input: unknown;
  subject: 'run_step' | 'budget' | null;
  name: string | null;
  output_schema: Record<string, unknown> | null;
  expires_at: string | null;
  step_id: string | null;
}

/**
 * What the run waits for from outside now, through the stream's scope (its credential re-checked):
 * its pending approvals (a step's, a budget's) and its waiting `run.wait_for` waitpoints, by step.
 */
export const pendingInputs = (read: ScopedRead, scope: Scope, executionId: string) =>
  read<PendingInput>(
    scope,
    `SELECT 'approval' AS kind, a.id, a.step_no, a.tool, a.input, 'run_step' AS subject, NULL AS name,
            NULL::jsonb AS output_schema, a.expires_at, NULL::uuid AS step_id
     FROM run_approvals a WHERE a.execution_id = $1::uuid AND a.status = 'pending'
     UNION ALL
     SELECT 'approval', b.id, b.step_no, b.tool, b.input, 'budget', NULL, NULL, NULL, NULL
     FROM run_budget_approvals b WHERE b.execution_id = $1::uuid AND b.status = 'pending'
     UNION ALL
     SELECT 'waitpoint', w.id, w.step_no, 'run.wait_for', NULL, NULL, w.name, w.output_schema, w.expires_at, s.id
     FROM waitpoints w LEFT JOIN run_steps s ON s.execution_id = w.execution_id AND s.step_no = w.step_no
     WHERE w.execution_id = $1::uuid AND w.status = 'waiting' AND w.kind = 'event'
     ORDER BY step_no`,
    [executionId],
  );

/** The answer an approval interrupt expects in its resume entry's `payload` (JSON Schema, `responseSchema`). */
const APPROVAL_RESPONSE_SCHEMA = {
  type: 'object',
  required: ['decision'],
  properties: {
    decision: { enum: ['approve', 'reject', 'respond'] },
    notes: { type: 'string', maxLength: LIMITS.runs.notesChars },
    input: { type: 'object', description: 'approve only: the step runs with this input instead' },
    message: { type: 'string', description: 'respond only (llm runs): what the model gets as the tool’s result' },
    edits: { type: 'object', description: 'approve only, a budget approval: the raised budget' },
  },
  additionalProperties: false,
};

/** The AG-UI interrupt that stands for an open approval or waitpoint of run `executionId`. */
export function interruptOf(executionId: string, open: PendingInput): Interrupt {
  const expiresAt = open.expires_at ? { expiresAt: new Date(open.expires_at).toISOString() } : {};
  const step = `${open.tool} (step ${open.step_no})`;
  if (open.kind === 'waitpoint') {
    return {
      id: open.id,
      reason: 'weft.waitpoint',
      message: `The run waits for ${open.name ? `“${open.name}”` : 'an event'}: answer with its output`,
      ...(open.step_id ? { toolCallId: open.step_id } : {}),
      ...(open.output_schema ? { responseSchema: open.output_schema } : {}),
      ...expiresAt,
      metadata: { execution_id: executionId, step_no: open.step_no, waitpoint_id: open.id, name: open.name },
    };
  }
  return {
    id: open.id,
    reason: 'weft.approval',
    message: open.subject === 'budget' ? `Raise the run’s budget for ${step}?` : `Approve ${step}?`,
    responseSchema: APPROVAL_RESPONSE_SCHEMA,
    ...expiresAt,
    metadata: {
      execution_id: executionId,
      approval_id: open.id,
      subject: open.subject,
      step_no: open.step_no,
      tool: open.tool,
      input: open.input,
    },
  };
}

/** An approval interrupt's resume payload, in AG-UI's lower case; mapped to the body of
 * `POST /v1/approvals/{id}/resolve`. */
const ApprovalAnswer = z.strictObject({
  decision: z.enum(['approve', 'reject', 'respond']),
  notes: z.string().max(LIMITS.runs.notesChars).optional(),
  input: z.record(z.string(), z.unknown()).optional(),
  message: z.string().trim().min(1).max(LIMITS.runs.notesChars).optional(),
  edits: BudgetLimits.optional(),
});
const DECISIONS = { approve: 'APPROVED', reject: 'REJECTED', respond: 'RESPOND' } as const;

/** The resolve body of resume entry `at`'s payload; 422 with `loc` under `body.resume.<at>.payload` otherwise. */
export function resolveBodyOf(payload: unknown, at: number): ResolveApprovalRequest {
  const parsed = ApprovalAnswer.safeParse(payload);
  if (!parsed.success) {
    throw new ValidationFailedError(
      parsed.error.issues.map((issue) => ({
        loc: ['body', 'resume', at, 'payload', ...(issue.path as (string | number)[])],
        msg: issue.message,
        type: 'value_error',
      })),
    );
  }
  const { decision, ...rest } = parsed.data;
  return { decision: DECISIONS[decision], ...rest };
}

/** An answered interrupt, found in the thread's run: what it is and where the run's log asked for it. */
export interface AskedInput {
  kind: 'approval' | 'waitpoint';
  id: string;
  executionId: string;
  /** The id of the run event that asked (`approval.requested`, `waitpoint.created`). */
  eventId: number;
  entry: ResumeEntry;
  at: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The interrupts `resume` answers, each found in the log of a run of `threadId` (one tagged
 * `ag-ui-thread:<threadId>`, or whose id the thread is) as the caller may read it: an id of no such
 * run (another thread's, another workspace's) is 404 `interrupt_not_found`; ids of two runs are 422.
 */
export async function findAsked(
  read: ScopedRead,
  scope: Scope,
  thread: { threadId: string; tag: string },
  resume: readonly ResumeEntry[],
): Promise<AskedInput[]> {
  const ids = resume.map((entry) => entry.interruptId);
  const runs = UUID.test(thread.threadId) ? `(e.id = $3::uuid OR $2 = ANY (e.tags))` : `$2 = ANY (e.tags)`;
  const rows = await read<{ execution_id: string; id: number; type: string; asked: string }>(
    scope,
    `SELECT ev.execution_id, ev.id, ev.type, coalesce(ev.data->>'approval_id', ev.data->>'waitpoint_id') AS asked
     FROM run_executions e JOIN run_events ev ON ev.execution_id = e.id
     WHERE ${runs} AND ev.type IN ('approval.requested', 'waitpoint.created')
       AND coalesce(ev.data->>'approval_id', ev.data->>'waitpoint_id') = ANY ($1::text[])`,
    [
      `{${ids.map((id) => JSON.stringify(id)).join(',')}}`,
      thread.tag,
      UUID.test(thread.threadId) ? thread.threadId : null,
    ],
  );
  const asked = resume.map((entry, at) => {
    const row = rows.find((found) => found.asked === entry.interruptId);
    if (!row) throw new NotFoundError({ error: 'interrupt_not_found', interrupt_id: entry.interruptId });
    const kind = ASKING_EVENTS[row.type]!;
    return { kind, id: entry.interruptId, executionId: row.execution_id, eventId: row.id, entry, at };
  });
  if (new Set(asked.map((input) => input.executionId)).size > 1) {
    const msg = 'A resume answers the interrupts of one run';
    throw new ValidationFailedError([{ loc: ['body', 'resume'], msg, type: 'value_error' }]);
  }
  return asked;
}
