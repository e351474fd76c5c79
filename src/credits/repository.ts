import type { EntityManager } from 'typeorm';
import { MoreThan } from 'typeorm';
import { queryFirst } from '../platform/db/query';
import { InternalError, NotFoundError } from '../platform/errors';
import { Tenant } from '../tenancy/entities';
import type { CreditKind } from './costs';
import { creditCost, isCreditKind } from './costs';
import { CreditLedgerEntry } from './entities';
import { InsufficientCreditsError } from './errors';

/** What a charge returns to the caller; `amount` is the number of credits charged (positive). */
export interface CreditReceipt {
  ledger_id: string;
  kind: CreditKind;
  amount: number;
}

export interface ReserveInput {
  tenantId: string;
  workspaceId: string;
  kind: CreditKind;
  /** Units of `kind`; the cost is `CREDIT_COSTS[kind] * quantity`. Default 1. */
  quantity?: number;
  /**
   * Makes the reservation idempotent within the workspace: a second call with the same key returns
   * the first reservation and charges nothing (Temporal activities run at least once).
   */
  idempotencyKey?: string;
}

type LedgerRow = Pick<CreditLedgerEntry, 'id' | 'kind' | 'amount'>;

function receiptOf(row: LedgerRow): CreditReceipt {
  // Reservations are always of a chargeable kind; only grants (never reserved) are not.
  if (!isCreditKind(row.kind)) throw new InternalError(`ledger row ${row.id} is not a reservation`);
  return { ledger_id: row.id, kind: row.kind, amount: -row.amount };
}

const ledger = (m: EntityManager) => m.getRepository(CreditLedgerEntry);

const findByIdempotencyKey = (m: EntityManager, workspaceId: string, idempotencyKey: string) =>
  ledger(m).findOne({ select: { id: true, kind: true, amount: true }, where: { workspaceId, idempotencyKey } });

/**
 * Charges `kind` in the caller's transaction: a conditional balance decrement (it cannot overdraw,
 * however many run at once, because the row lock serialises them and the condition is re-checked)
 * plus a negative ledger row. Throws 402 before anything is written when the balance is short or
 * the account is locked. Zero-cost kinds write a zero row for the audit trail and are never refused.
 */
export async function reserveCredits(m: EntityManager, input: ReserveInput): Promise<CreditReceipt> {
  const cost = creditCost(input.kind, input.quantity ?? 1);
  if (input.idempotencyKey) {
    const earlier = await findByIdempotencyKey(m, input.workspaceId, input.idempotencyKey);
    if (earlier) return receiptOf(earlier);
  }

  if (cost > 0) {
    // Raw SQL: the query builder cannot say a conditional decrement that reports whether it applied.
    const debited = await queryFirst<{ id: string }>(
      m,
      `UPDATE tenants SET credit_balance = credit_balance - $2
       WHERE id = $1 AND credit_balance >= $2 AND NOT locked RETURNING id`,
      [input.tenantId, cost],
    );
    if (!debited) await throwShortfall(m, input.tenantId, input.kind, cost);
  }

  // Raw SQL: ON CONFLICT against the partial unique index on the idempotency key.
  const inserted = await queryFirst<LedgerRow>(
    m,
    `INSERT INTO credit_ledger (tenant_id, workspace_id, kind, amount, idempotency_key)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (workspace_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
     RETURNING id, kind, amount`,
    [input.tenantId, input.workspaceId, input.kind, -cost, input.idempotencyKey ?? null],
  );
  if (inserted) return receiptOf(inserted);

  // A concurrent call with the same key committed first: give the credits back, return its receipt.
  if (cost > 0) await m.getRepository(Tenant).increment({ id: input.tenantId }, 'creditBalance', cost);
  const earlier = input.idempotencyKey && (await findByIdempotencyKey(m, input.workspaceId, input.idempotencyKey));
  if (!earlier) throw new InternalError('a conflicting reservation vanished');
  return receiptOf(earlier);
}

async function throwShortfall(m: EntityManager, tenantId: string, kind: CreditKind, required: number): Promise<never> {
  const tenant = await m.getRepository(Tenant).findOneBy({ id: tenantId });
  if (!tenant) throw new NotFoundError('Tenant not found');
  if (tenant.locked) {
    throw new InsufficientCreditsError({ error: 'insufficient_credits', required, available: 0, kind, locked: true });
  }
  throw new InsufficientCreditsError({
    error: 'insufficient_credits',
    required,
    available: tenant.creditBalance,
    kind,
  });
}

export interface RefundResult {
  /** The refund row, or the earlier one when this reservation was already refunded. */
  ledger_id: string | null;
  kind: CreditKind;
  amount: number;
  /** False when an earlier call already refunded it (refunds are idempotent) or nothing was charged. */
  refunded: boolean;
}

/**
 * Gives a reservation back: a positive row of the same kind linked by `linked_event_id`, and the
 * balance restored. Idempotent: the partial unique index allows one refund per reservation, so a
 * second call (or a concurrent one) changes nothing. Runs in the reservation's workspace scope.
 */
export async function refundCredits(m: EntityManager, input: { ledgerId: string }): Promise<RefundResult> {
  const reservation = await ledger(m).findOneBy({ id: input.ledgerId });
  if (!reservation) throw new NotFoundError('Credit reservation not found');
  const { kind } = receiptOf(reservation);
  if (reservation.amount >= 0) return { ledger_id: null, kind, amount: 0, refunded: false };

  // Raw SQL: ON CONFLICT against the partial unique index that allows one refund per reservation.
  const refund = await queryFirst<{ id: string; amount: number }>(
    m,
    `INSERT INTO credit_ledger (tenant_id, workspace_id, kind, amount, linked_event_id)
     SELECT tenant_id, workspace_id, kind, -amount, id FROM credit_ledger WHERE id = $1
     ON CONFLICT (linked_event_id) WHERE amount > 0 DO NOTHING
     RETURNING id, amount`,
    [input.ledgerId],
  );
  if (!refund) {
    const earlier = await ledger(m).findOneBy({ linkedEventId: input.ledgerId, amount: MoreThan(0) });
    return { ledger_id: earlier?.id ?? null, kind, amount: earlier?.amount ?? 0, refunded: false };
  }
  await m.getRepository(Tenant).increment({ id: reservation.tenantId }, 'creditBalance', refund.amount);
  return { ledger_id: refund.id, kind, amount: refund.amount, refunded: true };
}

export interface CreditBalance {
  tenant_id: string;
  balance: number;
  locked: boolean;
}

/** The tenant's current balance (tenants are not workspace-scoped; callers pass their principal's tenant). */
export async function readCreditBalance(m: EntityManager, tenantId: string): Promise<CreditBalance> {
  const tenant = await m.getRepository(Tenant).findOneBy({ id: tenantId });
  if (!tenant) throw new NotFoundError('Tenant not found');
  return { tenant_id: tenant.id, balance: tenant.creditBalance, locked: tenant.locked };
}
