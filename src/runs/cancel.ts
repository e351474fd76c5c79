import type { EntityManager } from 'typeorm';
import * as approvals from '../approvals/repository';
import { ConflictError } from '../platform/errors';
import { auditApproval } from './approval-audit';
import { cancelDescendants } from './children';
import * as executionRepo from './execution-repository';

// A run's cancel inside the caller's transaction, with its unfinished descendants (children.ts).

/**
 * Cancels a run in the caller's transaction: idempotent for a cancelled run, 409 for one that
 * finished otherwise; its pending approvals are cancelled into its chain. `releaseSlot` as for
 * `executionRepo.cancelExecution`.
 */
export async function cancelWithin(m: EntityManager, executionId: string, releaseSlot = true) {
  const found = await executionRepo.mustFindExecution(m, executionId);
  if (found.status === 'CANCELLED') return { run: found, started: false };
  const pending = (await approvals.approvalsOf(m, executionId)).filter((approval) => approval.status === 'pending');
  if (!(await executionRepo.cancelExecution(m, executionId, releaseSlot))) {
    throw new ConflictError({ error: 'run_finished', status: found.status, message: 'The run has finished' });
  }
  for (const approval of pending) await auditApproval(m, approval.id);
  await executionRepo.recordFinished(m, executionId);
  // A run that waited for a concurrency slot never started its workflow: nothing to wake.
  return { run: await executionRepo.mustFindExecution(m, executionId), started: !found.heldStart };
}

/** A cancel and its unfinished descendants' (`children.ts`), in the caller's transaction; and what to wake. */
export async function cancelTree(m: EntityManager, executionId: string) {
  const { run, started } = await cancelWithin(m, executionId);
  const below = await cancelDescendants(m, executionId, (tx, id) => cancelWithin(tx, id));
  return { run, woken: started ? [executionId, ...below] : below };
}
