import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { ConnectorFailure } from './outbound';
import { ConnectorCallError } from './outbound';

type Outcome =
  | { result: Record<string, unknown> }
  | { error: { error: ConnectorFailure; message: string; status?: number } };

/**
 * A write tool of a connector is sent at most once per idempotency key (issue 41), even when the
 * process dies mid-call and its activity is tried again: the call is recorded, committed, before it
 * is sent, and its outcome after. A retry that finds the outcome answers it again without a call; one
 * that finds the call sent and no outcome does not send it again (the remote end may have applied it)
 * and fails `outcome_unknown`, for a person to check the remote end. Read-only tools skip the ledger.
 * Rows past the replay window go in the hourly maintenance pass (`upkeep.ts`), not during a call.
 */
export function createCallLedger(uow: UnitOfWork) {
  /** Records the call as sent; the earlier attempt's row when there was one. */
  const begin = (principal: Principal, key: string, connectorId: string, tool: string) =>
    uow(scopeOf(principal), async (m) => {
      const inserted = (await m.query(
        `INSERT INTO connector_calls (workspace_id, idempotency_key, connector_id, tool) VALUES ($1, $2, $3, $4)
         ON CONFLICT DO NOTHING RETURNING 1`,
        [principal.workspaceId, key, connectorId, tool],
      )) as unknown[];
      if (inserted.length > 0) return undefined;
      const [earlier] = (await m.query(
        `SELECT outcome, sent_at FROM connector_calls WHERE workspace_id = $1 AND idempotency_key = $2`,
        [principal.workspaceId, key],
      )) as { outcome: Outcome | null; sent_at: Date }[];
      return earlier;
    });

  const finish = (principal: Principal, key: string, outcome: Outcome) =>
    uow(scopeOf(principal), (m) =>
      m.query(
        `UPDATE connector_calls SET outcome = $3, finished_at = now()
         WHERE workspace_id = $1 AND idempotency_key = $2 AND finished_at IS NULL`,
        [principal.workspaceId, key, outcome],
      ),
    );

  return {
    /** `send` once for `key`: its result, an earlier attempt's outcome, or `outcome_unknown`. */
    async once(
      call: { principal: Principal; idempotencyKey: string },
      target: { connectorId: string; tool: string },
      send: () => Promise<Record<string, unknown>>,
    ): Promise<Record<string, unknown>> {
      const { principal, idempotencyKey: key } = call;
      const earlier = await begin(principal, key, target.connectorId, target.tool);
      if (earlier?.outcome) {
        if ('result' in earlier.outcome) return earlier.outcome.result;
        const { error, message, status } = earlier.outcome.error;
        throw new ConnectorCallError(error, message, status);
      }
      if (earlier) {
        throw new ConnectorCallError(
          'outcome_unknown',
          `This call of ${target.tool} was sent at ${earlier.sent_at.toISOString()} and its answer was lost ` +
            '(the process making it stopped): it is not sent again. Check the remote end.',
        );
      }
      let outcome: Outcome;
      try {
        outcome = { result: await send() };
      } catch (error) {
        if (!(error instanceof ConnectorCallError)) throw error;
        const detail = error.detail as { error: ConnectorFailure; message: string; status?: number };
        await finish(principal, key, { error: detail });
        throw error;
      }
      await finish(principal, key, outcome);
      return outcome.result;
    },
  };
}

export type CallLedger = ReturnType<typeof createCallLedger>;
