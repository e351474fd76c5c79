import { createHash } from 'node:crypto';
import type { ApprovalVote, RunApproval } from '../approvals/entities';
import { resolvedCredential } from '../approvals/views';
import { canonicalJson } from '../capabilities/idempotency';
import type { BudgetApprovalRecord } from './budget-approvals';
import type { AuditKind, RunStep } from './entities';

/** The previous hash of a chain's first link. */
export const GENESIS_HASH = '0'.repeat(64);

/** hash = sha256(prev_hash ‖ canonical JSON of the entry), hex. */
export const chainHash = (prevHash: string, entry: unknown) =>
  createHash('sha256').update(prevHash, 'utf8').update(canonicalJson(entry), 'utf8').digest('hex');

/** The step columns a link covers. */
export type StepEntryFields = Pick<
  RunStep,
  'id' | 'stepNo' | 'kind' | 'tool' | 'input' | 'status' | 'output' | 'error' | 'creditsCharged' | 'supersedesStepId'
> &
  Partial<Pick<RunStep, 'reusedFromStepId' | 'policyDecision'>>;

/**
 * What a link covers, recomputed from its row whenever the chain is verified. Only what is final
 * once the link is written: a decision's later `superseded` mark is left out on purpose.
 */
export function stepEntry(step: StepEntryFields): Record<string, unknown> {
  if (step.kind === 'DECISION') {
    return {
      kind: 'DECISION',
      step_id: step.id,
      step_no: step.stepNo,
      decision: step.input.decision,
      rationale: step.input.rationale ?? null,
      supersedes_step_id: step.supersedesStepId,
    };
  }
  return {
    kind: 'TOOL',
    step_id: step.id,
    step_no: step.stepNo,
    tool: step.tool,
    input: step.input,
    status: step.status,
    output: step.output ?? null,
    error: step.error,
    credits_charged: step.creditsCharged,
    // Only for a rerun's copied step (issue 26), so links written before the column existed still verify.
    ...(step.reusedFromStepId ? { reused_from_step_id: step.reusedFromStepId } : {}),
    // Only when decided (issue 32): the approval rules' version and action, fixed once the step ran.
    ...(step.policyDecision ? { policy_decision: step.policyDecision } : {}),
  };
}

export const approvalEntry = (approval: RunApproval): Record<string, unknown> => {
  const credential = resolvedCredential(approval);
  return {
    kind: 'APPROVAL',
    approval_id: approval.id,
    step_no: approval.stepNo,
    tool: approval.tool,
    input: approval.input,
    status: approval.status,
    resolved_by: approval.resolvedBy,
    notes: approval.notes,
    // Only when recorded, so links written before the column existed still verify.
    ...(credential ? { resolved_by_credential: credential } : {}),
    // Issue 32 part 2, only when given: the input the step ran with instead, or the reviewer's answer.
    ...(approval.editedInput ? { edited_input: approval.editedInput } : {}),
    ...(approval.response !== null && approval.response !== undefined ? { response: approval.response } : {}),
    // Issue 32 parts 3 and 4, only when the rule set them: the approvers and deadline in force at the end,
    // how often it escalated, and whether the deadline (no person) decided it.
    ...(approval.approvers ? { approvers: approval.approvers } : {}),
    ...(approval.expiresAt ? { expires_at: approval.expiresAt.toISOString() } : {}),
    ...(approval.escalations ? { escalations: approval.escalations } : {}),
    ...(approval.expired ? { expired: true } : {}),
  };
};

/**
 * A BUDGET link (issue 40 item 4): a budget approval's decision — the limits and spend it was asked
 * with, the raise a reviewer gave (`edits`) or the rejection that ended the run, and who decided.
 */
export const budgetEntry = (approval: BudgetApprovalRecord): Record<string, unknown> => ({
  kind: 'BUDGET',
  approval_id: approval.id,
  step_no: approval.step_no,
  tool: approval.tool,
  budget: approval.budget,
  spent: approval.spent,
  step_credits: approval.step_credits,
  exceeded: approval.exceeded,
  status: approval.status,
  edits: approval.edits,
  resolved_by: approval.resolved_by,
  resolved_by_credential: { kind: approval.resolved_by_credential_kind, id: approval.resolved_by_credential_id },
  notes: approval.notes,
});

/** A VOTE link (issue 32 part 4): one person's vote on an approval that needs several. */
export const voteEntry = (vote: ApprovalVote): Record<string, unknown> => ({
  kind: 'VOTE',
  vote_id: vote.id,
  approval_id: vote.approval_id,
  user_id: vote.user_id,
  decision: vote.decision,
  credential: { kind: vote.credential_kind, id: vote.credential_id },
  notes: vote.notes,
});

export interface AuditLinkView {
  seq: number;
  kind: AuditKind;
  ref_id: string;
  entry: Record<string, unknown> | null;
  prev_hash: string;
  hash: string;
  created_at: string;
}

/** Walks the chain: the first link whose stored hashes do not follow from its row is `first_invalid_seq`. */
export function verifyChain(links: readonly Omit<AuditLinkView, 'entry'>[], entryOf: (seq: number) => unknown) {
  let prev = GENESIS_HASH;
  let firstInvalid: number | null = null;
  for (const link of links) {
    const entry = entryOf(link.seq);
    const ok = entry !== null && link.prev_hash === prev && chainHash(prev, entry) === link.hash;
    if (!ok && firstInvalid === null) firstInvalid = link.seq;
    prev = link.hash;
  }
  return {
    valid: firstInvalid === null,
    length: links.length,
    head_hash: links.at(-1)?.hash ?? null,
    first_invalid_seq: firstInvalid,
  };
}
