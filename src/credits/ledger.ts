import type { EntityManager } from 'typeorm';
import { NotFoundError } from '../platform/errors';
import type { CreditKind } from './costs';
import { creditCost } from './costs';
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

interface LedgerRow {
  id: string;
  kind: CreditKind;
  amount: number;
}

const receiptOf = (row: LedgerRow): CreditReceipt => ({ ledger_id: row.id, kind: row.kind, amount: -row.amount });

async function findByIdempotencyKey(
  m: EntityManager,
  workspaceId: string,
  key: string,
): Promise<LedgerRow | undefined> {
  const [row] = await m.query(
    `SELECT id, kind, amount FROM credit_ledger WHERE workspace_id = $1 AND idempotency_key = $2`,
    [workspaceId, key],
  );
  return row;
}

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
    const charged = await m.query(
      `UPDATE tenants SET credit_balance = credit_balance - $2
       WHERE id = $1 AND credit_balance >= $2 AND NOT locked RETURNING id`,
      [input.tenantId, cost],
    );
    // TypeORM returns [rows, affected] for UPDATE … RETURNING on postgres.
    const rows = Array.isArray(charged[0]) ? charged[0] : charged;
    if (rows.length === 0) await throwShortfall(m, input.tenantId, input.kind, cost);
  }

  const [inserted] = await m.query(
    `INSERT INTO credit_ledger (tenant_id, workspace_id, kind, amount, idempotency_key)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (workspace_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
     RETURNING id, kind, amount`,
    [input.tenantId, input.workspaceId, input.kind, -cost, input.idempotencyKey ?? null],
  );
  if (inserted) return receiptOf(inserted);

  // A concurrent call with the same key committed first: give the credits back, return its receipt.
  if (cost > 0) {
    await m.query(`UPDATE tenants SET credit_balance = credit_balance + $2 WHERE id = $1`, [input.tenantId, cost]);
  }
  const earlier = await findByIdempotencyKey(m, input.workspaceId, input.idempotencyKey!);
  return receiptOf(earlier!);
}

async function throwShortfall(m: EntityManager, tenantId: string, kind: CreditKind, required: number): Promise<never> {
  const [tenant] = await m.query(`SELECT credit_balance, locked FROM tenants WHERE id = $1`, [tenantId]);
  if (!tenant) throw new NotFoundError('Tenant not found');
  if (tenant.locked) {
    throw new InsufficientCreditsError({ error: 'insufficient_credits', required, available: 0, kind, locked: true });
  }
  throw new InsufficientCreditsError({
    error: 'insufficient_credits',
    required,
    available: Number(tenant.credit_balance),
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
  const [reservation] = await m.query(`SELECT id, tenant_id, kind, amount FROM credit_ledger WHERE id = $1`, [
    input.ledgerId,
  ]);
  if (!reservation) throw new NotFoundError('Credit reservation not found');
  if (reservation.amount >= 0) return { ledger_id: null, kind: reservation.kind, amount: 0, refunded: false };

  const [refund] = await m.query(
    `INSERT INTO credit_ledger (tenant_id, workspace_id, kind, amount, linked_event_id)
     SELECT tenant_id, workspace_id, kind, -amount, id FROM credit_ledger WHERE id = $1
     ON CONFLICT (linked_event_id) WHERE amount > 0 DO NOTHING
     RETURNING id, amount`,
    [input.ledgerId],
  );
  if (!refund) {
    const [earlier] = await m.query(`SELECT id, amount FROM credit_ledger WHERE linked_event_id = $1 AND amount > 0`, [
      input.ledgerId,
    ]);
    return { ledger_id: earlier?.id ?? null, kind: reservation.kind, amount: earlier?.amount ?? 0, refunded: false };
  }
  await m.query(`UPDATE tenants SET credit_balance = credit_balance + $2 WHERE id = $1`, [
    reservation.tenant_id,
    refund.amount,
  ]);
  return { ledger_id: refund.id, kind: reservation.kind, amount: refund.amount, refunded: true };
}

export interface CreditBalance {
  tenant_id: string;
  balance: number;
  locked: boolean;
}

/** The tenant's current balance (tenants are not workspace-scoped; callers pass their principal's tenant). */
export async function readCreditBalance(m: EntityManager, tenantId: string): Promise<CreditBalance> {
  const [row] = await m.query(`SELECT id, credit_balance, locked FROM tenants WHERE id = $1`, [tenantId]);
  if (!row) throw new NotFoundError('Tenant not found');
  return { tenant_id: row.id, balance: Number(row.credit_balance), locked: row.locked };
}
