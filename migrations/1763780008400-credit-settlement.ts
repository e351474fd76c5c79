import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Reservations that must settle: a charge made before its work (a search, a node's embedding) is
 * `pending` until the work confirms it (`confirmed`) or it is refunded (`refunded`); rows that
 * take no part (grants, refunds, the prompt saga's reservations) leave it NULL. The
 * credits-reconcile pass refunds what stays pending too long; the definer function tells it which
 * workspaces have such rows, past RLS, without reading them.
 */
export class CreditSettlement1763780008400 implements MigrationInterface {
  name = 'CreditSettlement1763780008400';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE credit_ledger ADD COLUMN settlement text CHECK (settlement IN ('pending', 'confirmed', 'refunded'));
CREATE INDEX credit_ledger_pending_idx ON credit_ledger (workspace_id, created_at) WHERE settlement = 'pending';
CREATE FUNCTION weft_credit_pending_workspaces(min_age interval) RETURNS SETOF uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$ SELECT DISTINCT workspace_id FROM credit_ledger
        WHERE settlement = 'pending' AND created_at <= now() - min_age $$;
REVOKE ALL ON FUNCTION weft_credit_pending_workspaces(interval) FROM PUBLIC;
`);
    await grantToAppRole(q, 'weft_credit_pending_workspaces(interval)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION IF EXISTS weft_credit_pending_workspaces(interval);
DROP INDEX IF EXISTS credit_ledger_pending_idx;
ALTER TABLE credit_ledger DROP COLUMN IF EXISTS settlement;
`);
  }
}

/** The app role (whoever besides the owner reads `nodes`) is a definer function's only caller. */
export async function grantToAppRole(q: QueryRunner, signature: string): Promise<void> {
  const [{ app }] = await q.query(`SELECT string_agg(quote_ident(grantee), ',') AS app FROM (
    SELECT DISTINCT grantee FROM information_schema.role_table_grants WHERE table_name = 'nodes'
      AND privilege_type = 'SELECT'
      AND grantee <> current_user) g`);
  if (app) await q.query(`GRANT EXECUTE ON FUNCTION ${signature} TO ${app}`);
}
