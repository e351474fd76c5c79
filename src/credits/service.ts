import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import type { CreditKind } from './costs';
import type { CreditBalance, CreditReceipt } from './ledger';
import { readCreditBalance, refundCredits, reserveCredits } from './ledger';

/**
 * The ledger for request handlers: each call is its own short transaction (the tenant row is locked
 * only while it runs), so no network call ever happens while the balance is held.
 */
export function createCreditService(deps: { uow: UnitOfWork; logger: Logger }) {
  const { uow, logger } = deps;

  const reserve = (
    principal: Principal,
    kind: CreditKind,
    options: { quantity?: number; idempotencyKey?: string } = {},
  ) =>
    uow(scopeOf(principal), (m) =>
      reserveCredits(m, { tenantId: principal.tenantId, workspaceId: principal.workspaceId, kind, ...options }),
    );

  const refund = (principal: Principal, receipt: Pick<CreditReceipt, 'ledger_id'>) =>
    uow(scopeOf(principal), (m) => refundCredits(m, { ledgerId: receipt.ledger_id }));

  return {
    balance: (principal: Principal): Promise<CreditBalance> =>
      uow(scopeOf(principal), (m) => readCreditBalance(m, principal.tenantId)),
    reserve,
    refund,

    /**
     * Charges first (402 before any model call or data change), then runs `work`; when `work`
     * fails the charge is refunded and the original error is rethrown.
     */
    async charged<T>(principal: Principal, kind: CreditKind, work: (receipt: CreditReceipt) => Promise<T>): Promise<T> {
      const receipt = await reserve(principal, kind);
      try {
        return await work(receipt);
      } catch (error) {
        try {
          await refund(principal, receipt);
        } catch (refundError) {
          // The original failure matters more to the caller; the reconciler settles what is left.
          logger.error({ err: refundError, ledger_id: receipt.ledger_id }, 'credit refund failed');
        }
        throw error;
      }
    },
  };
}

export type CreditService = ReturnType<typeof createCreditService>;
