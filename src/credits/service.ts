import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { decodeKeysetCursor, encodeKeysetCursor } from '../platform/db/keyset-cursor';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import { forEachWorkspace, onePage } from '../platform/workspace-sweep';
import type { CreditKind } from '../rules/costs';
import type { CreditReceipt } from './repository';
import {
  confirmReservations,
  listLedger,
  readCreditBalance,
  refundCredits,
  reserveCredits,
  stalePendingReservations,
  workspacesWithStaleReservations,
} from './repository';
import type { LedgerPage, LedgerQuery } from './schemas';

/** Who pays: the tenant, charged in the workspace where the work happens (a Principal fits). */
export interface Payer {
  tenantId: string;
  workspaceId: string;
  userId?: string;
}

export interface ChargeOptions {
  /** Units of the kind; default 1. */
  quantity?: number;
  /** Keys the reservation (say, a request's correlation id); default a fresh `<kind>:<uuid>`. */
  idempotencyKey?: string;
  /** With `idempotencyKey`: a refunded reservation under it does not answer (see `reserveCredits`). */
  chargeAgainAfterRefund?: boolean;
}

export interface Charge<Prepared> {
  receipt: CreditReceipt;
  /** What `prepare` read in the reservation's transaction (before the charge: see chargeFor). */
  prepared: Prepared;
  /**
   * Confirms the charge inside the work's own last transaction, sparing chargeFor a transaction of
   * its own; only when nothing after that transaction can fail (a confirmed charge is never refunded).
   * It is that transaction's last statement: it commits it, in the same message (`commitWith`).
   */
  confirm(m: EntityManager): Promise<void>;
}

const RECONCILE_BATCH = 500;

/**
 * The ledger for work someone waits on. Each step is its own short transaction (the tenant row is
 * locked only while it runs), so no network call ever happens while the balance is held.
 */
export function createCreditService(deps: { uow: UnitOfWork; logger: Logger }) {
  const { uow, logger } = deps;

  /**
   * Charges `kind` first (402 before any model call or data change), runs `work`, then settles:
   * confirmed when `work` succeeds, refunded (and the error rethrown) when it fails. The charge is
   * `pending` until then, keyed by `idempotencyKey`; if this process dies in between, the
   * credits-reconcile pass refunds it, so every charge settles. `prepare` runs in the
   * reservation's own transaction just before the charge, so reads the work needs (a workspace's
   * settings) cost no second transaction; a refused charge rolls back what it wrote.
   */
  function chargeFor<T>(
    payer: Payer,
    kind: CreditKind,
    work: (charge: Charge<undefined>) => Promise<T>,
    options?: ChargeOptions,
  ): Promise<T>;
  function chargeFor<T, Prepared>(
    payer: Payer,
    kind: CreditKind,
    work: (charge: Charge<Prepared>) => Promise<T>,
    options: ChargeOptions & { prepare: (m: EntityManager) => Promise<Prepared> },
  ): Promise<T>;
  async function chargeFor<T, Prepared>(
    payer: Payer,
    kind: CreditKind,
    work: (charge: Charge<Prepared | undefined>) => Promise<T>,
    options: ChargeOptions & { prepare?: (m: EntityManager) => Promise<Prepared> } = {},
  ): Promise<T> {
    const scope = { workspaceId: payer.workspaceId, userId: payer.userId };
    const { receipt, prepared } = await uow(scope, async (m) => {
      // `prepare` first, and the charge last, sent with the COMMIT: every charge of the tenant waits for
      // its row, held from the debit to the commit's flush and for no round trip. A refusal rolls back
      // what `prepare` wrote, as before.
      const prepared = options.prepare ? await options.prepare(m) : undefined;
      const receipt = await reserveCredits(
        m,
        {
          tenantId: payer.tenantId,
          workspaceId: payer.workspaceId,
          kind,
          quantity: options.quantity,
          idempotencyKey: options.idempotencyKey ?? `${kind}:${randomUUID()}`,
          freshKey: options.idempotencyKey === undefined,
          chargeAgainAfterRefund: options.chargeAgainAfterRefund,
          pendingSettlement: true,
        },
        { andCommit: true },
      );
      return { receipt, prepared };
    });
    let confirmedInWork = false;
    const confirm = async (m: EntityManager) => {
      await confirmReservations(m, [receipt.ledger_id], { andCommit: true });
      confirmedInWork = true;
    };

    let result: T;
    try {
      result = await work({ receipt, prepared, confirm });
    } catch (error) {
      try {
        await uow(scope, (m) => refundCredits(m, { ledgerId: receipt.ledger_id }));
      } catch (refundError) {
        // The original failure matters more to the caller; the reservation stays pending, and
        // the credits-reconcile pass refunds it.
        logger.error({ err: refundError, ledger_id: receipt.ledger_id }, 'credit refund failed; reconcile will settle');
      }
      throw error;
    }
    if (!confirmedInWork) {
      try {
        await uow(scope, (m) => confirmReservations(m, [receipt.ledger_id]));
      } catch (confirmError) {
        // The work is done and the caller gets its answer; an unconfirmed charge is refunded by the
        // reconcile pass, so the error costs the tenant nothing.
        logger.error({ err: confirmError, ledger_id: receipt.ledger_id }, 'credit confirmation failed');
      }
    }
    return result;
  }

  /** One workspace: refunds its reservations pending for longer than `minAgeSeconds`. */
  async function reconcileWorkspace(workspaceId: string, minAgeSeconds: number): Promise<number> {
    let refunded = 0;
    for (;;) {
      const batch = await uow({ workspaceId }, async (m) => {
        const stale = await stalePendingReservations(m, { minAgeSeconds, limit: RECONCILE_BATCH });
        let done = 0;
        for (const reservation of stale) {
          if ((await refundCredits(m, { ledgerId: reservation.id })).refunded) done += 1;
        }
        return { read: stale.length, done };
      });
      refunded += batch.done;
      // Every row read leaves `pending` (refunded, or settled by a concurrent confirmation).
      if (batch.read < RECONCILE_BATCH) return refunded;
    }
  }

  return {
    chargeFor,

    /** The workspace's ledger page and the tenant's balance, read in one transaction. */
    ledger: (principal: Principal, query: LedgerQuery): Promise<LedgerPage> => {
      const after = query.cursor ? decodeKeysetCursor(query.cursor) : undefined;
      return uow(scopeOf(principal), async (m) => {
        const { balance, locked } = await readCreditBalance(m, principal.tenantId);
        const rows = await listLedger(m, { limit: query.limit, after });
        const last = rows.at(-1);
        return {
          balance,
          locked,
          entries: rows.map((row) => ({
            ledger_id: row.id,
            kind: row.kind,
            amount: row.amount,
            settlement: row.settlement,
            refund_of: row.linked_event_id,
            created_at: row.created_at.toISOString(),
          })),
          next_cursor: last && rows.length === query.limit ? encodeKeysetCursor(last.created_at_text, last.id) : null,
        };
      });
    },

    /**
     * The credits-reconcile pass: refunds every reservation still pending after `minAgeSeconds`
     * (its work died between the charge and the settlement). Idempotent: refunds are.
     */
    async reconcile(input: {
      minAgeSeconds: number;
      onWorkspace?: () => void;
    }): Promise<{ workspaces: number; refunded: number }> {
      let refunded = 0;
      const swept = await forEachWorkspace(
        {
          job: 'credits reconcile',
          page: onePage(() => uow({}, (m) => workspacesWithStaleReservations(m, input.minAgeSeconds))),
          heartbeat: () => input.onWorkspace?.(),
          warn: (fields, message) => logger.warn(fields, message),
        },
        async (workspaceId) => {
          const count = await reconcileWorkspace(workspaceId, input.minAgeSeconds);
          if (count > 0) logger.warn({ workspace_id: workspaceId, refunded: count }, 'refunded unsettled reservations');
          refunded += count;
        },
      );
      return { workspaces: swept.visited, refunded };
    },
  };
}

export type CreditService = ReturnType<typeof createCreditService>;
