import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';

/**
 * A charge as one statement (src/credits/repository.ts `reserveCredits`): the tenant's conditional
 * debit and the ledger's negative row, where they were two statements and a round trip each. A caller
 * can then send it with its transaction's COMMIT in one message, so the tenant row, which every charge
 * of the tenant waits for, is held for the function and the commit's flush and no network round trip.
 * A short balance or a locked account writes nothing and answers `shortfall` (the balance as JSON), so
 * the caller's transaction stays usable (the embedding charge goes on to the next node); with `p_raise`
 * it RAISEs instead (SQLSTATE WC402, the same JSON in DETAIL), for a charge sent with its COMMIT:
 * nothing after it in the message runs, so the transaction never commits around a refused charge.
 * A concurrent call that took the same idempotency key first wins: the debit is given back and its
 * row returned. SECURITY INVOKER: the caller's policies apply, as to the statements it replaces.
 */
export class ReserveCreditsFunction1763780023000 implements MigrationInterface {
  name = 'ReserveCreditsFunction1763780023000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE OR REPLACE FUNCTION weft_reserve_credits(p_tenant uuid, p_workspace uuid, p_kind text, p_cost integer,
  p_key text, p_settlement text, p_raise boolean)
RETURNS TABLE (id uuid, kind text, amount integer, shortfall json)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = public AS $fn$
#variable_conflict use_column
DECLARE
  v_balance bigint;
  v_locked boolean;
BEGIN
  IF p_cost > 0 THEN
    UPDATE tenants t SET credit_balance = t.credit_balance - p_cost
    WHERE t.id = p_tenant AND t.credit_balance >= p_cost AND NOT t.locked;
    IF NOT FOUND THEN
      -- A statement of its own, so it sees the balance the debit's re-check saw, not the one at its start.
      SELECT t.credit_balance, t.locked INTO v_balance, v_locked FROM tenants t WHERE t.id = p_tenant;
      shortfall := json_build_object('tenant', v_locked IS NOT NULL, 'available', v_balance, 'locked', v_locked);
      IF p_raise THEN
        RAISE EXCEPTION 'insufficient credits' USING ERRCODE = 'WC402', DETAIL = shortfall::text;
      END IF;
      RETURN NEXT;
      RETURN;
    END IF;
  END IF;
  INSERT INTO credit_ledger AS l (tenant_id, workspace_id, kind, amount, idempotency_key, settlement)
  VALUES (p_tenant, p_workspace, p_kind, -p_cost, p_key, p_settlement)
  ON CONFLICT (workspace_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
  RETURNING l.id, l.kind, l.amount INTO id, kind, amount;
  IF NOT FOUND THEN
    -- A concurrent call with the same key committed first: give the credits back, return its row.
    IF p_cost > 0 THEN
      UPDATE tenants t SET credit_balance = t.credit_balance + p_cost WHERE t.id = p_tenant;
    END IF;
    SELECT l.id, l.kind, l.amount INTO id, kind, amount FROM credit_ledger l
    WHERE l.workspace_id = p_workspace AND l.idempotency_key = p_key;
  END IF;
  RETURN NEXT;
END
$fn$;
REVOKE ALL ON FUNCTION weft_reserve_credits(uuid, uuid, text, integer, text, text, boolean) FROM PUBLIC;
`);
    await grantToAppRole(q, 'weft_reserve_credits(uuid, uuid, text, integer, text, text, boolean)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS weft_reserve_credits(uuid, uuid, text, integer, text, text, boolean)`);
  }
}
