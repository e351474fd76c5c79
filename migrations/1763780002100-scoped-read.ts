import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A read in one round trip: the function scopes its own statement (set_config(..., true), as the
 * unit of work does) and then runs the caller's query under RLS as the calling role. The setting
 * lives only for that statement's implicit transaction, so the pooled connection keeps nothing.
 * The query text comes from Weft's code, never from a request; values travel as bound text
 * parameters ($1 … $8, cast in the query).
 */
export class ScopedRead1763780002100 implements MigrationInterface {
  name = 'ScopedRead1763780002100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE FUNCTION weft_scoped_read(p_workspace uuid, p_user uuid, p_sql text, p_params text[] DEFAULT '{}')
  RETURNS SETOF jsonb
  LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = public AS $$
BEGIN
  PERFORM set_config('app.workspace_id', COALESCE(p_workspace::text, ''), true),
          set_config('app.user_id', COALESCE(p_user::text, ''), true);
  RETURN QUERY EXECUTE 'SELECT to_jsonb(r) FROM (' || p_sql || ') r'
    USING p_params[1], p_params[2], p_params[3], p_params[4], p_params[5], p_params[6], p_params[7], p_params[8];
END $$;`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS weft_scoped_read(uuid, uuid, text, text[])`);
  }
}
