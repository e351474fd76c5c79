import { defineCapability } from '../capabilities/define';
import { scopeOf } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { ConflictError, NotFoundError } from '../platform/errors';
import type { OutboxRelay } from '../platform/outbox/relay';
import { enqueueEvent } from '../platform/outbox/relay';
import { stepEntry } from './audit';
import * as auditRepo from './audit-repository';
import { FINISHED_STATUSES } from './entities';
import { recordRunEvent } from './event-repository';
import { decisionRecorded } from './events';
import * as executionRepo from './execution-repository';
import { ReadDecisionsInput, ReadDecisionsOutput, RecordDecisionInput, RecordDecisionOutput } from './schemas';
import * as stepRepo from './step-repository';

/**
 * `agent.record_decision` and `agent.read_decisions` (contract 4.2): DECISION steps of a run, each
 * appended to the run's hash chain, with revision lineage through `supersedes_step_id`. Free.
 */
export const runCapabilities = (deps: { uow: UnitOfWork; outbox: Pick<OutboxRelay, 'kick'> }) => [
  defineCapability({
    name: 'agent.record_decision',
    access: 'write',
    description: 'Appends a DECISION step to a run that has not finished, optionally superseding a head decision',
    input: RecordDecisionInput,
    output: RecordDecisionOutput,
    example: {
      execution_id: '7a1c2b9e-4d3f-4b8a-9c6e-2f1d0e9b8a7c',
      decision: 'Ship the billing refactor behind a flag',
      rationale: 'Two failing tests are flaky, not regressions.',
    },
    errors: {
      404: 'run_not_found or step_not_found: no such run, or no such DECISION step in it',
      409: 'run_finished (the run has ended) or step_superseded (that decision is not a head any more)',
    },
    handler: async ({ m, principal, afterCommit }, input) => {
      // The chain's lock (the run row) first: the run's status, the head to supersede and the next
      // step number are then read by one decision at a time, so two cannot supersede one head.
      await executionRepo.lockExecution(m, input.execution_id);
      const run = await executionRepo.mustFindExecution(m, input.execution_id);
      if (FINISHED_STATUSES.includes(run.status)) {
        throw new ConflictError({ error: 'run_finished', status: run.status, message: 'The run has finished' });
      }
      const supersedes = input.supersedes_step_id ?? null;
      if (supersedes) {
        const earlier = await stepRepo.findStepById(m, supersedes);
        if (!earlier || earlier.executionId !== run.id || earlier.kind !== 'DECISION') {
          throw new NotFoundError({ error: 'step_not_found', step_id: supersedes });
        }
        if (earlier.superseded) {
          throw new ConflictError({ error: 'step_superseded', step_id: supersedes, message: 'Not a head decision' });
        }
        await stepRepo.markSuperseded(m, supersedes);
      }
      const step = await stepRepo.insertDecisionLocked(m, {
        workspaceId: principal.workspaceId,
        executionId: run.id,
        input: { decision: input.decision, rationale: input.rationale ?? null, supersedes_step_id: supersedes },
        supersedes,
      });
      const audit = await auditRepo.appendAudit(m, {
        workspaceId: principal.workspaceId,
        executionId: run.id,
        kind: 'DECISION',
        refId: step.id,
        entry: stepEntry(step),
      });
      await recordRunEvent(m, run.id, {
        type: 'decision.recorded',
        data: {
          step_id: step.id,
          step_no: step.stepNo,
          decision: input.decision,
          rationale: input.rationale ?? null,
          supersedes_step_id: supersedes,
        },
        audit,
      });
      await enqueueEvent(m, decisionRecorded, {
        workspaceId: principal.workspaceId,
        aggregateId: run.id,
        payload: { execution_id: run.id, step_id: step.id, supersedes_step_id: supersedes },
      });
      afterCommit(() => deps.outbox.kick(principal.workspaceId));
      return { step_id: step.id, step_no: step.stepNo, execution_id: run.id, supersedes_step_id: supersedes };
    },
  }),
  defineCapability({
    name: 'agent.read_decisions',
    access: 'read',
    description: 'The DECISION steps of a run, oldest first; `head_only` leaves out superseded ones',
    input: ReadDecisionsInput,
    output: ReadDecisionsOutput,
    example: { execution_id: '7a1c2b9e-4d3f-4b8a-9c6e-2f1d0e9b8a7c', head_only: true },
    errors: { 404: 'run_not_found: no such run in the workspace' },
    handler: ({ principal }, input) =>
      deps.uow(scopeOf(principal), async (m) => {
        await executionRepo.mustFindExecution(m, input.execution_id);
        const decisions = await stepRepo.decisionsOf(m, input.execution_id, input.head_only);
        return {
          decisions: decisions.map((step) => ({
            step_id: step.id,
            step_no: step.stepNo,
            decision: String(step.input.decision),
            rationale: typeof step.input.rationale === 'string' ? step.input.rationale : null,
            supersedes_step_id: step.supersedesStepId,
            superseded: step.superseded,
            recorded_at: (step.finishedAt ?? step.startedAt ?? new Date()).toISOString(),
          })),
        };
      }),
  }),
];
