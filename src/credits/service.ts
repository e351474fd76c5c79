import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import type { CreditKind } from './costs';
import type { CreditReceipt } from './repository';
import { refundCredits, reserveCredits } from './repository';

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
}

export interface Charge<Prepared> {
  receipt: CreditReceipt;
  /** What `prepare` read in the reservation's transaction. */
  prepared: Prepared;
}

/**
 * The ledger for work a caller waits on: each step is its own short transaction (the tenant row
 * is locked only while it runs), so no network call ever happens while the balance is held.
 */
export function createCreditService(deps: { uow: UnitOfWork; logger: Logger }) {
  const { uow, logger } = deps;

  /**
   * Charges `kind` first (402 before any model call or data change), then runs `work`; when
   * `work` fails the charge is refunded and the original error is rethrown. `prepare` runs in the
   * reservation's own transaction, right after the charge, so reads the work needs (a workspace's
   * settings) cost no second transaction.
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
    const charge = await uow(scope, async (m) => {
      const receipt = await reserveCredits(m, {
        tenantId: payer.tenantId,
        workspaceId: payer.workspaceId,
        kind,
        quantity: options.quantity,
        idempotencyKey: options.idempotencyKey ?? `${kind}:${randomUUID()}`,
      });
      return { receipt, prepared: options.prepare ? await options.prepare(m) : undefined };
    });
    try {
      return await work(charge);
    } catch (error) {
      try {
        await uow(scope, (m) => refundCredits(m, { ledgerId: charge.receipt.ledger_id }));
      } catch (refundError) {
        // The original failure matters more to the caller.
        logger.error({ err: refundError, ledger_id: charge.receipt.ledger_id }, 'credit refund failed');
      }
      throw error;
    }
  }

  return { chargeFor };
}

export type CreditService = ReturnType<typeof createCreditService>;
