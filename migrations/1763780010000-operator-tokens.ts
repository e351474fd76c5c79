import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The application roles (as 1763780008500-credential-hardening.ts finds them): set-up granted them every table. */
async function appRoles(q: QueryRunner): Promise<string[]> {
  const rows: { role: string }[] = await q.query(
    `SELECT DISTINCT quote_ident(grantee) AS role FROM information_schema.role_table_grants
     WHERE table_schema = 'public' AND table_name = 'outbox' AND privilege_type = 'SELECT' AND grantee <> current_user`,
  );
  return rows.map((row) => row.role);
}

/**
 * Operator codec tokens (`weft operator token`): they open Temporal payloads of every workspace, so
 * they belong to no workspace (no RLS) and only the owner connection writes them; the app role may
 * read them to authenticate the codec routes, and nothing else.
 */
export class OperatorTokens1763780010000 implements MigrationInterface {
  name = 'OperatorTokens1763780010000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE operator_tokens (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  label text NOT NULL,
  token_hash text NOT NULL UNIQUE,
  prefix text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  revoked_at timestamptz
)`);
    for (const role of await appRoles(q)) {
      await q.query(`REVOKE ALL ON operator_tokens FROM ${role}`);
      await q.query(`GRANT SELECT ON operator_tokens TO ${role}`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE operator_tokens');
  }
}
