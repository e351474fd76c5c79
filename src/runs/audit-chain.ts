import type { EntityManager } from 'typeorm';
import * as approvals from '../approvals/repository';
import { approvalEntry, budgetEntry, GENESIS_HASH, stepEntry, verifyChain, voteEntry } from './audit';
import * as auditRepo from './audit-repository';
import { budgetApprovalsOf } from './budget-approvals';
import type { RunExecution } from './entities';
import * as executionRepo from './execution-repository';
import { rerunEntry } from './rerun';
import * as stepRepo from './step-repository';

// `GET /v1/runs/{id}/audit`: the chain as stored, each entry recomputed from its row, and a rerun's lineage.

/** A run's hash chain, each link's entry recomputed from its row, and whether it still holds. */
export async function chainOf(m: EntityManager, run: RunExecution) {
  const links = await auditRepo.auditOf(m, run.id);
  const refsOf = (kind: 'APPROVAL' | 'STEP' | 'VOTE') =>
    links
      .filter((link) => (kind === 'STEP' ? ['TOOL', 'DECISION'].includes(link.kind) : link.kind === kind))
      .map((link) => link.refId);
  const entries = new Map<string, Record<string, unknown>>([
    ...(await stepRepo.stepsByIds(m, refsOf('STEP'))).map((step) => [step.id, stepEntry(step)] as const),
    ...(await approvals.approvalsByIds(m, refsOf('APPROVAL'))).map((row) => [row.id, approvalEntry(row)] as const),
    ...(await approvals.votesByIds(m, refsOf('VOTE'))).map((vote) => [vote.id, voteEntry(vote)] as const),
    ...(links.some((link) => link.kind === 'BUDGET')
      ? (await budgetApprovalsOf(m, run.id)).map((row) => [row.id, budgetEntry(row)] as const)
      : []),
  ]);
  // A RERUN link covers the run's own lineage columns.
  const entryOf = (link: (typeof links)[number]) =>
    link.kind === 'RERUN' ? (link.refId === run.id ? rerunEntry(run) : null) : (entries.get(link.refId) ?? null);
  const views = links.map((link) => ({
    seq: link.seq,
    kind: link.kind,
    ref_id: link.refId,
    entry: entryOf(link),
    prev_hash: link.prevHash,
    hash: link.hash,
    created_at: link.createdAt.toISOString(),
  }));
  return { steps: views, ...verifyChain(views, (seq) => views[seq]?.entry ?? null) };
}

/** A rerun's lineage: whether the head its link 0 names is a link of the earlier chain, and that chain holds. */
export async function lineageOf(m: EntityManager, run: RunExecution) {
  if (!run.rerunOf || !run.rerunOfHeadHash) return null;
  const earlier = await executionRepo.findExecution(m, run.rerunOf);
  const chain = earlier ? await chainOf(m, earlier) : null;
  const found =
    chain !== null &&
    (run.rerunOfHeadHash === GENESIS_HASH || chain.steps.some((link) => link.hash === run.rerunOfHeadHash));
  return { rerun_of: run.rerunOf, head_hash: run.rerunOfHeadHash, found, earlier_valid: chain?.valid ?? false };
}
