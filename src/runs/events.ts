import { z } from 'zod';
import type { EventPayload } from '../platform/outbox/event';
import { defineEvent } from '../platform/outbox/event';
import { priorityOf } from './flow-schemas';
import type { RunTemplate } from './schemas';
import type { RunWorkflowInput } from './workflow';

/**
 * A committed dispatch: what the run workflow's start needs beyond the rows. Written in the
 * dispatch's transaction; the API starts the workflow from the same payload right after the
 * commit, and the handler if the API did not get to it.
 */
export const runDispatched = defineEvent(
  'run.dispatched',
  1,
  z.object({
    execution_id: z.string(),
    agent: z.enum(['playbook', 'llm']),
    step_count: z.number().int().nonnegative(),
    /** An llm run's goal (its first 100 characters), for the workflow's summary. */
    goal: z.string().optional(),
    approval_recheck_seconds: z.number().optional(),
    approval_rechecks_per_run: z.number().optional(),
    /** Issue 43: the run's `flow.priority` (for the workflow's input); absent in events written before it (3). */
    priority: z.number().int().optional(),
    /** Issue 43: its fairness weight in the task queue (`fair-share.ts`); absent: Temporal's default, 1. */
    weight: z.number().positive().max(1).optional(),
    /** The run's tags, for the search attribute WeftTags (issue 26). */
    tags: z.array(z.string()).optional(),
    /**
     * A playbook's steps, so its workflow starts on its first step without reading them (issue 27).
     * Absent for llm runs and reruns (whose reused steps are not run), which begin by reading the rows.
     */
    steps: z.array(z.object({ tool: z.string(), requires_approval: z.boolean() })).optional(),
  }),
);
export type RunDispatched = EventPayload<typeof runDispatched>;

/** The workflow input a `run.dispatched` payload describes. */
export const runStartInput = (workspaceId: string, payload: RunDispatched): RunWorkflowInput => ({
  workspaceId,
  executionId: payload.execution_id,
  agent: payload.agent,
  stepCount: payload.step_count,
  ...(payload.approval_recheck_seconds !== undefined
    ? { approvalRecheckSeconds: payload.approval_recheck_seconds }
    : {}),
  ...(payload.approval_rechecks_per_run !== undefined
    ? { approvalRechecksPerRun: payload.approval_rechecks_per_run }
    : {}),
  ...(payload.goal !== undefined ? { goal: payload.goal } : {}),
  ...(payload.tags?.length ? { tags: payload.tags } : {}),
  ...(payload.priority !== undefined ? { priority: payload.priority } : {}),
  ...(payload.weight !== undefined ? { weight: payload.weight } : {}),
  ...(payload.steps
    ? {
        plan: payload.steps.map((step, stepNo) => ({
          stepNo,
          tool: step.tool,
          requiresApproval: step.requires_approval,
        })),
      }
    : {}),
});

/** Each decision `agent.record_decision` records (contract 6); nothing handles it today. */
export const decisionRecorded = defineEvent(
  'run.decision_recorded',
  1,
  z.object({ execution_id: z.string(), step_id: z.string(), supersedes_step_id: z.string().nullable() }),
);

/**
 * A run held back by its flow (issue 43 item 2, `flow.ts`): throttled or debounced. Written in the
 * dispatch's transaction; its handler starts the run's timer workflow `run-flow-<execution_id>`.
 */
export const runFlowHeld = defineEvent('run.flow_held', 1, z.object({ execution_id: z.string() }));

/** The `run.dispatched` event's payload: what the workflow's start needs beyond the rows. */
export const dispatchedEvent = (
  id: string,
  body: RunTemplate,
  rerun: boolean,
  recheck: { seconds: number; perRun: number },
): RunDispatched => ({
  execution_id: id,
  agent: body.agent,
  step_count: body.agent === 'playbook' ? body.input.steps.length : 0,
  ...(body.agent === 'llm' ? { goal: body.input.goal.slice(0, 100) } : {}),
  ...(body.agent === 'playbook' && !rerun
    ? {
        steps: body.input.steps.map((step) => ({
          tool: step.tool,
          // A stored template (a schedule's, a trigger's) is dispatched as saved, without zod's default.
          requires_approval: step.requires_approval === true,
        })),
      }
    : {}),
  ...(body.tags?.length ? { tags: [...new Set(body.tags)] } : {}),
  priority: priorityOf(body.flow),
  approval_recheck_seconds: recheck.seconds,
  approval_rechecks_per_run: recheck.perRun,
});
