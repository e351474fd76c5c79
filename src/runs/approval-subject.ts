import type { EntityManager } from 'typeorm';
import type { RunApproval } from '../approvals/entities';
import { decideByPerson } from '../approvals/quorum';
import * as approvals from '../approvals/repository';
import type { ApprovalSubject } from '../approvals/subject';
import { approvalRows } from '../approvals/views';
import type { AnyCapability } from '../capabilities/define';
import type { CapabilityService } from '../capabilities/service';
import type { FilterPool } from '../filters/pool';
import { ValidationFailedError } from '../platform/errors';
import { auditApproval, auditVote } from './approval-audit';
import { stepEntry } from './audit';
import * as auditRepo from './audit-repository';
import { pinsOf } from './connector-pins';
import { judgeEdit } from './edit-judgement';
import type { RunExecution } from './entities';
import { recordRunEvent } from './event-repository';
import * as executionRepo from './execution-repository';
import { stepIssues } from './step-issues';
import * as stepRepo from './step-repository';
import type { WakeReason } from './wake';

/**
 * A RESPOND (issue 32 part 2): the step never runs; it is recorded SKIPPED with the reviewer's
 * message as its error, which is what the llm agent reads as the tool's result, and chained.
 */
async function respondInsteadOfStep(m: EntityManager, approval: RunApproval, message: string) {
  const error = {
    code: 'reviewer_responded',
    message: `The reviewer responded instead: ${message}`,
    step: approval.stepNo,
  };
  const step = await stepRepo.completeStepLocked(m, approval.executionId, approval.stepNo, {
    status: 'SKIPPED',
    output: null,
    error,
    creditsCharged: 0,
  });
  if (!step) return;
  const audit = await auditRepo.appendAuditLocked(m, {
    workspaceId: approval.workspaceId,
    executionId: approval.executionId,
    kind: 'TOOL',
    refId: step.id,
    entry: stepEntry(step),
  });
  await recordRunEvent(m, approval.executionId, {
    type: 'step.failed',
    data: { step_no: step.stepNo, step_id: step.id, tool: step.tool, error },
    audit,
  });
}

/**
 * A run's step as an approval's subject (issue 12, 32): the run's dispatcher asked for it. A decision
 * is checked against the step's tool (an edited input) and agent (RESPOND), taken under the run's
 * lock then the approval's (`decideByPerson`: votes and quorum), applied to the step (its edited
 * input, or a RESPOND instead of it), chained into the run's audit, and wakes the run after commit.
 */
export function runStepApprovals(deps: {
  capabilities: Pick<CapabilityService, 'tools' | 'toolsFor'>;
  wake: (executionId: string, reason: WakeReason) => Promise<void>;
  /** The approval rules' input filters, for judging an edited input (NM-4). */
  filters?: Pick<FilterPool, 'evaluate'>;
}): ApprovalSubject<{ approval: RunApproval; run: RunExecution }> {
  let tools: ReadonlyMap<string, AnyCapability> | undefined;
  // Built on first use: the capability registry lists every feature's tools, this one's included.
  const toolsByName = () => {
    tools ??= new Map(deps.capabilities.tools.map((tool) => [tool.name, tool]));
    return tools;
  };
  return {
    kind: 'run_step',

    list: async (m, query) => approvalRows(m, await approvals.listApprovals(m, query)),

    async describe(m, approvalId) {
      const approval = await approvals.findApprovalById(m, approvalId);
      return approval ? (await approvalRows(m, [approval]))[0]! : null;
    },

    async requester(m, approvalId) {
      const approval = await approvals.findApprovalById(m, approvalId);
      if (!approval) return null;
      const run = await executionRepo.mustFindExecution(m, approval.executionId);
      return { requester: { userId: run.userId, credential: run.principal.credential }, asked: { approval, run } };
    },

    async onResolved(m, principal, { approval: found, run }, body) {
      // Issue 32 part 2: an edit is checked against the tool's schema, a RESPOND is for an llm run.
      if (body.input !== undefined) {
        const step = { tool: found.tool, input: body.input, requires_approval: false };
        // A connector's tool is the workspace's own: looked up beside the registry's.
        const known = toolsByName().has(found.tool)
          ? toolsByName()
          : new Map((await deps.capabilities.toolsFor(run.workspaceId, pinsOf(run))).map((tool) => [tool.name, tool]));
        const issues = stepIssues(known, step, 0, ['body']);
        if (issues.length > 0) throw new ValidationFailedError(issues);
      }
      // NM-4: the edit runs as the dispatcher, so the rules judge it as they would the step's own input.
      if (body.input !== undefined && body.decision === 'APPROVED') {
        const edit = { run, approval: found, edit: body.input, resolverUserId: principal.userId };
        await judgeEdit(m, { ...edit, filters: deps.filters });
      }
      if (body.decision === 'RESPOND' && run.agent !== 'llm') {
        throw new ValidationFailedError([
          {
            loc: ['body', 'decision'],
            msg: 'RESPOND answers an llm run’s tool call; this is a playbook run',
            type: 'value_error',
          },
        ]);
      }
      // The run's lock, then the approval's (in decideByPerson), as the deadline's outcome takes them.
      await executionRepo.lockExecution(m, found.executionId);
      const decided = await decideByPerson(m, principal, found.id, body, (approval, vote) =>
        auditVote(m, approval, vote),
      );
      const { approval, status, remaining } = decided;
      const response = {
        approval_id: found.id,
        decision: body.decision,
        execution_id: approval.executionId,
        status,
        approvals_remaining: remaining,
      };
      if (status === 'pending') return { response };
      if (body.input !== undefined) await stepRepo.editStepInput(m, approval.executionId, approval.stepNo, body.input);
      await auditApproval(m, found.id);
      if (body.decision === 'RESPOND') await respondInsteadOfStep(m, approval, body.message!);
      return { response, afterCommit: () => deps.wake(approval.executionId, 'approval_resolved') };
    },
  };
}
