import { iso } from '../platform/dates';
import { pinnedView } from './connector-pins';
import type { RunExecution, RunStep } from './entities';
import type { RunSummary } from './schemas';

// The entity → response mappers of the runs API (`service.ts`): rows as the routes answer them.

export const stepRow = (step: RunStep) => ({
  step_id: step.id,
  step_no: step.stepNo,
  kind: step.kind,
  tool: step.tool,
  input: step.input,
  requires_approval: step.requiresApproval,
  status: step.status,
  output: step.output ?? null,
  error: step.error,
  credits_charged: step.creditsCharged,
  supersedes_step_id: step.supersedesStepId,
  superseded: step.superseded,
  reused_from_step_id: step.reusedFromStepId,
  policy_decision: step.policyDecision ?? null,
  started_at: iso(step.startedAt),
  finished_at: iso(step.finishedAt),
});

/** Why a QUEUED run waits: its concurrency key's slot, its flow, or its turn at the priority gate (issue 43 item 2). */
export const queuedReason = (run: Pick<RunExecution, 'status' | 'heldStart' | 'flowHold'>) => {
  if (run.status !== 'QUEUED' || !run.heldStart) return null;
  if (run.flowHold === 'throttle') return 'throttled' as const;
  if (run.flowHold === 'debounce') return 'debounced' as const;
  if (run.flowHold === 'priority') return 'priority' as const;
  return 'concurrency_limit' as const;
};

const FLOW_TIMED = new Set<string | null>(['throttled', 'debounced']);

/** A run's tags, concurrency key and rerun lineage, as its summary shows them (issue 26 parts 4 and 5). */
const controlOf = (run: RunExecution) => ({
  tags: run.tags,
  concurrency:
    run.concurrencyKey && run.concurrencyLimit && run.concurrencyPolicy
      ? { key: run.concurrencyKey, limit: run.concurrencyLimit, policy: run.concurrencyPolicy }
      : null,
  queued_reason: queuedReason(run),
  flow: {
    priority: run.priority,
    throttle_key: run.throttleKey,
    rate_limit_key: run.rateLimitKey,
    debounce_key: run.debounceKey,
    // A throttle's or debounce's time; a run waiting at the priority gate has none to show.
    starts_at: run.flowStartAt && FLOW_TIMED.has(queuedReason(run)) ? run.flowStartAt.toISOString() : null,
  },
  rerun_of: run.rerunOf,
});

export const summaryOf = (run: RunExecution): RunSummary => ({
  execution_id: run.id,
  run_id: run.runId,
  agent: run.agent,
  status: run.status,
  error: run.error,
  credits_charged: run.creditsCharged,
  ...controlOf(run),
  schedule_id: run.scheduleId ?? null,
  parent_execution_id: run.parentExecutionId ?? null,
  root_execution_id: run.rootExecutionId ?? null,
  connector_versions: pinnedView(run.connectorVersions ?? null),
  created_at: run.createdAt.toISOString(),
  updated_at: run.updatedAt.toISOString(),
});
