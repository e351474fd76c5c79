import type { EntityManager } from 'typeorm';
import { In, MoreThan } from 'typeorm';
import { queryFirst, queryRows } from '../platform/db/query';
import type { Scope, ScopedRead } from '../platform/db/unit-of-work';
import { commitWith } from '../platform/db/unit-of-work';
import { InternalError, NotFoundError } from '../platform/errors';
import type { CreditKind } from '../rules/costs';
import { creditCost, isCreditKind } from '../rules/costs';
import { Tenant } from '../tenancy/entities';
import type { Settlement } from './entities';
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
  /** The key was made for this call (a fresh uuid), so no earlier reservation can hold it: skip looking. */
  freshKey?: boolean;
  /**
   * The caller confirms the charge once its work is done (`confirmReservations`) or refunds it;
   * until then it is `pending`, and the credits-reconcile pass refunds it when it stays so too long.
   */
  pendingSettlement?: boolean;
  /**
   * A refunded reservation under `idempotencyKey` does not answer a repeat: the repeat charges
   * again under the next free `<key>#<n>`, so work retried after a refund (a transient failure)
   * is paid once, while a retry that finds a pending or confirmed charge still pays nothing.
   */
  chargeAgainAfterRefund?: boolean;
}

type LedgerRow = Pick<CreditLedgerEntry, 'id' | 'kind' | 'amount'>;

function receiptOf(row: LedgerRow): CreditReceipt {
  // Reservations are always of a chargeable kind; only grants (never reserved) are not.
  if (!isCreditKind(row.kind)) throw new InternalError(`ledger row ${row.id} is not a reservation`);
  return { ledger_id: row.id, kind: row.kind, amount: -row.amount };
}

const ledger = (m: EntityManager) => m.getRepository(CreditLedgerEntry);

const findByIdempotencyKey = (m: EntityManager, workspaceId: string, idempotencyKey: string) =>
  ledger(m).findOne({
    select: { id: true, kind: true, amount: true, settlement: true },
    where: { workspaceId, idempotencyKey },
  });

/**
 * The key a repeat charges under when refunded reservations do not count: `key`, else `key#2`,
 * `key#3` … the first that is free or holds a live (pending or confirmed) reservation. One index
 * lookup per earlier refund, and refunds of one piece of work are few (its retries).
 */
async function liveKey(m: EntityManager, workspaceId: string, key: string): Promise<string> {
  for (let n = 1; ; n++) {
    const candidate = n === 1 ? key : `${key}#${n}`;
    const earlier = await findByIdempotencyKey(m, workspaceId, candidate);
    if (earlier?.settlement !== 'refunded') return candidate;
  }
}

/**
 * Charges `kind` in the caller's transaction: a conditional balance decrement (it cannot overdraw,
 * however many run at once, because the row lock serialises them and the condition is re-checked)
 * plus a negative ledger row, both in one statement (`weft_reserve_credits`, migration 1763780023000).
 * Throws 402 before anything is written when the balance is short or the account is locked. Zero-cost
 * kinds write a zero row for the audit trail and are never refused. With `andCommit` the charge is the
 * transaction's last statement, sent with its COMMIT (`commitWith`), so the tenant row is locked for no
 * round trip: then nothing may follow it in the transaction.
 */
export async function reserveCredits(
  m: EntityManager,
  request: ReserveInput,
  options: { andCommit?: boolean } = {},
): Promise<CreditReceipt> {
  const cost = creditCost(request.kind, request.quantity ?? 1);
  const input =
    request.idempotencyKey && request.chargeAgainAfterRefund && !request.freshKey
      ? { ...request, idempotencyKey: await liveKey(m, request.workspaceId, request.idempotencyKey) }
      : request;
  if (input.idempotencyKey && !input.freshKey) {
    const earlier = await findByIdempotencyKey(m, input.workspaceId, input.idempotencyKey);
    if (earlier) return receiptOf(earlier);
  }
  // With COMMIT in the same message a refusal must raise ($7), so that the COMMIT does not run.
  const params = [
    input.tenantId,
    input.workspaceId,
    input.kind,
    cost,
    input.idempotencyKey ?? null,
    input.pendingSettlement ? 'pending' : null,
    options.andCommit === true,
  ];
  let row: (LedgerRow & { shortfall: Shortfall | null }) | undefined;
  try {
    [row] = await (options.andCommit ? commitWith : queryRows)<LedgerRow & { shortfall: Shortfall | null }>(
      m,
      RESERVE_SQL,
      params,
    );
  } catch (error) {
    const { code, detail } = error as { code?: string; detail?: string };
    if (code === 'WC402' && detail) throw refusal(JSON.parse(detail) as Shortfall, input.kind, cost);
    throw error;
  }
  if (row?.shortfall) throw refusal(row.shortfall, input.kind, cost);
  // The function returns the row of a concurrent call that took the key first; none when it vanished.
  if (!row?.id) throw new InternalError('a conflicting reservation vanished');
  return receiptOf(row);
}

const RESERVE_SQL = `SELECT id, kind, amount, shortfall FROM weft_reserve_credits($1::uuid, $2::uuid, $3::text,
  $4::integer, $5::text, $6::text, $7::boolean)`;

/** What `weft_reserve_credits` saw of a balance it could not charge. */
interface Shortfall {
  tenant: boolean;
  available: number | string | null;
  locked: boolean | null;
}

/** The 402 of the contract for a refused charge (a locked account reports `available: 0`), or 404 for no tenant. */
function refusal(seen: Shortfall, kind: CreditKind, required: number): Error {
  if (!seen.tenant) return new NotFoundError('Tenant not found');
  if (seen.locked) {
    return new InsufficientCreditsError({ error: 'insufficient_credits', required, available: 0, kind, locked: true });
  }
  return new InsufficientCreditsError({
    error: 'insufficient_credits',
    required,
    available: Number(seen.available),
    kind,
  });
}

export interface RefundResult {
  /** The refund row, or the earlier one when this reservation was already refunded. */
  ledger_id: string | null;
  kind: CreditKind;
  amount: number;
  /**
   * False when an earlier call already refunded it (refunds are idempotent), nothing was charged,
   * or the work it paid for was done and confirmed it (a confirmed charge is never refunded).
   */
  refunded: boolean;
}

/**
 * Gives a reservation back: a positive row of the same kind linked by `linked_event_id`, and the
 * balance restored. Idempotent: the partial unique index allows one refund per reservation, so a
 * second call (or a concurrent one) changes nothing. A confirmed reservation is not refunded: the
 * row lock taken here is the one `confirmReservations` takes, so exactly one of them wins. Runs in
 * the reservation's workspace scope.
 */
export async function refundCredits(m: EntityManager, input: { ledgerId: string }): Promise<RefundResult> {
  const reservation = await ledger(m).findOne({ where: { id: input.ledgerId }, lock: { mode: 'pessimistic_write' } });
  if (!reservation) throw new NotFoundError('Credit reservation not found');
  const { kind } = receiptOf(reservation);
  if (reservation.settlement === 'confirmed') return { ledger_id: null, kind, amount: 0, refunded: false };
  if (reservation.settlement === 'pending') await ledger(m).update(reservation.id, { settlement: 'refunded' });
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

/**
 * Confirms pending reservations whose work is done: they can no longer be refunded. Returns the
 * ids it confirmed (a reservation refunded meanwhile is not among them). With `andCommit`, the
 * transaction's last statement, sent with its COMMIT (`commitWith`): one round trip for both.
 */
export async function confirmReservations(
  m: EntityManager,
  ledgerIds: readonly string[],
  options: { andCommit?: boolean } = {},
): Promise<string[]> {
  if (ledgerIds.length === 0) return [];
  // Raw SQL: the builder's update cannot say which rows it changed.
  const rows = await (options.andCommit ? commitWith : queryRows)<{ id: string }>(
    m,
    `UPDATE credit_ledger SET settlement = 'confirmed' WHERE id = ANY($1::uuid[]) AND settlement = 'pending'
     RETURNING id`,
    [ledgerIds],
  );
  return rows.map((row) => row.id);
}

/**
 * The scope's pending reservations of `kind` under these idempotency keys. With `lock`, they stay
 * locked until the transaction ends, so confirming or refunding them cannot race the other.
 */
export const pendingReservations = (
  m: EntityManager,
  kind: CreditKind,
  idempotencyKeys: readonly string[],
  options: { lock?: boolean } = {},
): Promise<CreditLedgerEntry[]> =>
  idempotencyKeys.length === 0
    ? Promise.resolve([])
    : ledger(m).find({
        where: { kind, idempotencyKey: In([...idempotencyKeys]), settlement: 'pending' },
        ...(options.lock ? { lock: { mode: 'pessimistic_write' } } : {}),
      });

/** The scope's reservations still pending after `minAgeSeconds` (raw SQL: ages on the database's clock). */
export const stalePendingReservations = (m: EntityManager, input: { minAgeSeconds: number; limit: number }) =>
  queryRows<{ id: string; kind: string; idempotency_key: string | null }>(
    m,
    `SELECT id, kind, idempotency_key FROM credit_ledger
     WHERE settlement = 'pending' AND created_at <= now() - make_interval(secs => $1)
     ORDER BY created_at LIMIT $2`,
    [input.minAgeSeconds, input.limit],
  );

/**
 * Workspaces holding reservations pending for longer than `minAgeSeconds`, across every workspace:
 * the definer function `weft_credit_pending_workspaces` tells only which, past RLS.
 */
export async function workspacesWithStaleReservations(m: EntityManager, minAgeSeconds: number): Promise<string[]> {
  const rows = await queryRows<{ workspace_id: string }>(
    m,
    `SELECT weft_credit_pending_workspaces(make_interval(secs => $1)) AS workspace_id`,
    [minAgeSeconds],
  );
  return rows.map((row) => row.workspace_id);
}

export interface CreditBalance {
  tenant_id: string;
  balance: number;
  locked: boolean;
}

/** The tenant's current balance (tenants are not workspace-scoped; callers pass their principal's tenant). */
const CREDIT_BALANCE_SQL = `SELECT id AS tenant_id, credit_balance AS balance, locked FROM tenants WHERE id = $1::uuid`;

/** CREDIT_BALANCE_SQL's row (its bigint as text) as the balance; no row is an unknown tenant. */
function creditBalanceOf(
  row: { tenant_id: string; balance: string | number; locked: boolean } | null | undefined,
): CreditBalance {
  if (!row) throw new NotFoundError('Tenant not found');
  return { tenant_id: row.tenant_id, balance: Number(row.balance), locked: row.locked };
}

/** The tenant's current balance, inside the caller's unit of work. */
export async function readCreditBalance(m: EntityManager, tenantId: string): Promise<CreditBalance> {
  return creditBalanceOf(await queryFirst(m, CREDIT_BALANCE_SQL, [tenantId]));
}

/** The same, as one scoped read outside any transaction: a run's step of `billing.credits_balance` is one statement. */
export async function readCreditBalanceNow(read: ScopedRead, scope: Scope, tenantId: string): Promise<CreditBalance> {
  const [row] = await read<Parameters<typeof creditBalanceOf>[0]>(scope, CREDIT_BALANCE_SQL, [tenantId]);
  return creditBalanceOf(row);
}

export interface LedgerRowText {
  id: string;
  kind: string;
  amount: number;
  settlement: Settlement | null;
  linked_event_id: string | null;
  created_at_text: string;
  created_at: Date;
}

/**
 * The scope's ledger rows, newest first, keyset-paged on (created_at, id) (raw SQL: the row
 * comparison). RLS limits them to the workspace: an operator's grant is tenant-level and not among them.
 */
export const listLedger = (m: EntityManager, query: { limit: number; after?: { createdAt: string; id: string } }) =>
  queryRows<LedgerRowText>(
    m,
    `SELECT id, kind, amount, settlement, linked_event_id, created_at, created_at::text AS created_at_text
     FROM credit_ledger
     WHERE ($1::timestamptz IS NULL OR (created_at, id) < ($1::timestamptz, $2::uuid))
     ORDER BY created_at DESC, id DESC LIMIT $3`,
    [query.after?.createdAt ?? null, query.after?.id ?? null, query.limit],
  );
