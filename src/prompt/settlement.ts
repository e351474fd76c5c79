// How a prompt run ends, in the caller's transaction: its audit row (ok or failed), and the
// settlement of a run that ended without its compensation.
import type { EntityManager } from 'typeorm';
import { refundCredits } from '../credits/repository';
import { touchNodes } from '../graph/writes';
import { ConflictError, NotFoundError } from '../platform/errors';
import type { FailureDetails } from '../platform/temporal/failures';
import type { GroundedAnswer, Intent } from './model/contract';
import { lockReservation, recordPromptRun } from './repository';
import { auditSummary } from './summary';
import { emitNodesCreated, undoWrites } from './writes';

/** What every audit row says of its run. */
export interface AuditInput {
  workspaceId: string;
  correlationId: string;
  promptKind: string;
  sourceHash: string;
  /** SHA-256 of the request (`requestHash` in summary.ts); null for a run nobody claimed. */
  requestHash: string | null;
  intent: Intent;
  startedAtMs: number;
}

export interface CompletionInput extends AuditInput {
  ledgerId: string;
  creditsUsed: number;
  nodesCreated: number;
  edgesCreated: number;
  answer: GroundedAnswer | null;
}

export interface FailureInput extends AuditInput {
  /** The reservation, or null when the run failed before reserving (or was refused). */
  ledgerId: string | null;
  failure: FailureDetails;
}

/**
 * Settles a run as done: the ok audit row (with the answer a replay shows), the references of the
 * cited nodes, and `node.created` for the nodes it created (how many: the caller kicks the outbox
 * after commit), under the reservation's lock. A repeat finds the row and changes nothing; a run the
 * reconcile pass already settled as abandoned (undone and refunded) stays that way, and this throws.
 */
export async function settleCompleted(
  m: EntityManager,
  input: CompletionInput,
): Promise<{ recorded: boolean; emitted: number }> {
  const reservation = await lockReservation(m, input.ledgerId);
  if (!reservation) throw new NotFoundError('Credit reservation not found');
  if (reservation.refunded && !reservation.completed) {
    throw new ConflictError('This prompt was settled as abandoned: its writes were undone and its credits refunded');
  }
  const written = await recordPromptRun(m, {
    ...auditRow(input),
    status: 'ok',
    nodeCount: input.nodesCreated,
    edgeCount: input.edgesCreated,
    creditsUsed: input.creditsUsed,
    ledgerId: input.ledgerId,
    errorCode: null,
    summary: auditSummary({
      intent: input.intent,
      nodesCreated: input.nodesCreated,
      edgesCreated: input.edgesCreated,
      answer: input.answer?.answer,
    }),
    answer: input.answer?.answer ?? null,
    citations: input.answer?.citations ?? null,
    failure: null,
  });
  if (!written) return { recorded: false, emitted: 0 };
  if (input.answer) await touchNodes(m, input.answer.citations);
  return { recorded: true, emitted: await emitNodesCreated(m, input.workspaceId, input.correlationId) };
}

/**
 * Does what a run's compensation would have done, under the reservation's lock: undo its writes,
 * refund, audit the failure. Does nothing to a run that completed meanwhile; idempotent otherwise.
 */
export async function settleAbandoned(m: EntityManager, input: FailureInput): Promise<{ settled: boolean }> {
  if (input.ledgerId) {
    const reservation = await lockReservation(m, input.ledgerId);
    if (!reservation || reservation.completed) return { settled: false };
  }
  const undone = await undoWrites(m, input.correlationId);
  const refunded = input.ledgerId ? (await refundCredits(m, { ledgerId: input.ledgerId })).refunded : false;
  const recorded = await recordFailure(m, input);
  return { settled: undone || refunded || recorded };
}

/** The failure audit row: counts 0, credits 0 after the refund, the error's class name. */
export const recordFailure = (m: EntityManager, input: FailureInput) =>
  recordPromptRun(m, {
    ...auditRow(input),
    status: 'error',
    nodeCount: 0,
    edgeCount: 0,
    creditsUsed: 0,
    ledgerId: input.ledgerId,
    errorCode: input.failure.errorClass,
    summary: auditSummary({ intent: input.intent, nodesCreated: 0, edgesCreated: 0, error: input.failure.errorClass }),
    answer: null,
    citations: null,
    failure: input.failure,
  });

const auditRow = (input: AuditInput) => ({
  workspaceId: input.workspaceId,
  correlationId: input.correlationId,
  promptKind: input.promptKind,
  sourceHash: input.sourceHash,
  requestHash: input.requestHash,
  intent: input.intent,
  durationMs: Math.max(0, Date.now() - input.startedAtMs),
});
