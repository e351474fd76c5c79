import { z } from 'zod';
import { APPROVAL_STATUSES } from '../approvals/entities';
import { ApprovalList, BudgetLimits, ResolveApprovalRequest, ResolveApprovalResponse } from '../approvals/schemas';
import type { ApprovalService } from '../approvals/service';
import { defineCapability, defineDurableCapability } from '../capabilities/define';
import { ForbiddenError, ValidationFailedError } from '../platform/errors';
import { LIMITS } from '../rules/limits';
import type { RunService } from './service';
import { Waitpoint } from './waitpoint-routes';
import type { WaitpointService } from './waitpoints';

/** Tools a run's step never calls (refused if it does), so an llm agent is never offered them. */
export const NOT_A_STEP: ReadonlySet<string> = new Set(['approvals.resolve']);

const approvalNotFound = 'approval_not_found: no such approval in the workspace (another workspace’s too)';

/**
 * An approval is the human gate on what an agent does (issue 23): a run's step never decides one, its
 * own or another run's. Checked before anything is read, so a step learns nothing about the approval.
 */
const approvalByRunStep = () =>
  new ForbiddenError({
    error: 'approval_by_run_step',
    message: 'A run’s step cannot resolve an approval: a person decides it, outside any run',
  });

/**
 * Answering what a run waits for, as tools (issue 42): the approvals inbox and its resolve, and an
 * event waitpoint's completion, so an MCP client (or any caller of `/v1/cap`) answers an
 * `input_required` task through the same door it started it. Each is its REST route through the same
 * service, with its scope: `approvals.resolve` needs `approvals:write`, which MCP tokens (and OAuth
 * access tokens, which are MCP tokens) never hold, and the separation of duties applies as there.
 */
export const answerCapabilities = (deps: {
  runs: () => RunService;
  approvals: () => ApprovalService;
  waitpoints: () => WaitpointService;
}) => [
  defineCapability({
    name: 'approvals.list',
    access: 'read',
    description:
      'The workspace’s approvals (runs’ steps and budgets, staged change-sets), newest first, as ' +
      '`GET /v1/approvals` lists them; `status` filters, `execution_id` keeps one run’s (404 for a run of ' +
      'another workspace)',
    input: z.strictObject({
      status: z.enum(APPROVAL_STATUSES).optional(),
      execution_id: z.uuid().optional().describe('Only this run’s approvals: its steps’, then its budget’s.'),
      limit: z.number().int().min(1).max(LIMITS.runs.list.max).default(LIMITS.runs.list.default),
    }),
    // The REST schemas' shapes, without their OpenAPI ids: a tool's schema is one object at the top.
    output: z.object(ApprovalList.shape),
    scopes: ['runs:read'],
    example: { status: 'pending' },
    errors: { 404: 'run_not_found: no such run in the workspace' },
    handler: async ({ principal }, input) => {
      if (!input.execution_id) return deps.approvals().listApprovals(principal, input);
      const { approvals } = await deps.runs().get(principal, input.execution_id);
      const kept = approvals.filter((row) => input.status === undefined || row.status === input.status);
      return { approvals: kept.slice(0, input.limit) };
    },
  }),
  defineDurableCapability({
    name: 'approvals.resolve',
    access: 'write',
    // Runs outside the layer's transaction: the inbox's resolve commits, then wakes the run.
    durable: true,
    description:
      'A person’s decision on a pending approval, as `POST /v1/approvals/{approval_id}/resolve` takes it: ' +
      '`approve` (with `input`, the step runs with that edit; with `edits`, a budget approval raises the ' +
      'budget) or `reject` (the run fails with `approval_rejected`); `comment` is kept as its notes. Needs ' +
      '`approvals:write`, which MCP and OAuth tokens never hold. Separation of duties as there: the ' +
      'credential that dispatched the run is refused (403 `approval_by_dispatcher`), and so is its user ' +
      'where the approval policy wants another member (403 `approval_by_dispatching_user`). Never a run’s ' +
      'step (403 `approval_by_run_step`): agents do not approve their own steps',
    input: z.strictObject({
      approval_id: z.uuid(),
      decision: z.enum(['approve', 'reject']),
      comment: z.string().max(LIMITS.runs.notesChars).optional().describe('Kept as the decision’s notes.'),
      input: z
        .record(z.string(), z.unknown())
        .optional()
        .describe('approve only: the step runs with this input instead, checked against the tool’s schema.'),
      edits: BudgetLimits.optional().describe(
        'A budget approval’s approve only, and required there: the raised budget.',
      ),
    }),
    output: z.object(ResolveApprovalResponse.shape),
    scopes: ['approvals:write'],
    example: { approval_id: '7a1c2b9e-4d3f-4b8a-9c6e-2f1d0e9b8a7c', decision: 'approve', comment: 'Looks right.' },
    errors: {
      403: 'approval_by_run_step, approval_by_dispatcher, approval_by_dispatching_user or not_an_approver',
      404: approvalNotFound,
      409: 'Already resolved, its run has finished, approval_expired or already_voted',
      422: 'An edit with reject, or an edited input or budget the step or the rules refuse',
    },
    handler: async (call, input) => {
      if (call.runId) throw approvalByRunStep();
      // The REST body's own rules (an edit goes with approve only), located in this tool's input.
      const body = ResolveApprovalRequest.safeParse({
        decision: input.decision === 'approve' ? 'APPROVED' : 'REJECTED',
        ...(input.comment !== undefined ? { notes: input.comment } : {}),
        ...(input.input !== undefined ? { input: input.input } : {}),
        ...(input.edits !== undefined ? { edits: input.edits } : {}),
      });
      if (!body.success) {
        throw new ValidationFailedError(
          body.error.issues.map((issue) => ({
            loc: ['body', ...issue.path.map(String)],
            msg: issue.message,
            type: issue.code,
          })),
        );
      }
      const resolved = await deps.approvals().resolve(call.principal, input.approval_id, body.data);
      return { result: resolved, credits_charged: 0 };
    },
  }),
  defineDurableCapability({
    name: 'waitpoints.complete',
    access: 'write',
    durable: true,
    description:
      'Completes a waiting `event` waitpoint (a run’s `run.wait_for` step) with `output`, as ' +
      '`POST /v1/waitpoints/{waitpoint_id}/complete` does: checked against its `output_schema` (422), the ' +
      'step succeeds with it and the run goes on. Needs runs:write',
    input: z.strictObject({
      waitpoint_id: z.uuid(),
      output: z.unknown().describe('Checked against the waitpoint’s `output_schema`; the step’s output carries it.'),
    }),
    output: z.object(Waitpoint.shape),
    scopes: ['runs:write'],
    example: { waitpoint_id: '7a1c2b9e-4d3f-4b8a-9c6e-2f1d0e9b8a7c', output: { approved: true } },
    errors: {
      404: 'waitpoint_not_found: no such waitpoint in the workspace',
      409: 'waitpoint_not_waiting or waitpoint_not_completable',
      422: 'The output fails the waitpoint’s `output_schema`',
    },
    handler: async ({ principal }, input) => ({
      result: await deps.waitpoints().complete(principal, input.waitpoint_id, input.output),
      credits_charged: 0,
    }),
  }),
];
