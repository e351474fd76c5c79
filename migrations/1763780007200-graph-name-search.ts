import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Name search for typeahead and the neighborhood's `q`. Under row-level security Postgres only
 * uses leakproof operators as index conditions, and neither lower() nor ILIKE is leakproof, so a
 * policy-filtered query can use neither the lower(name) index nor the trigram index: it reads the
 * whole workspace (250 ms at 100k nodes). This definer function (owned by the migration role,
 * like weft_outbox_pending_workspaces) applies the same workspace rule explicitly and returns
 * only ids, which the caller joins back to `nodes` under its own policy. Each branch is planned
 * for its actual arguments (EXECUTE), so the planner weighs the trigram index against walking
 * the importance index with real statistics. A q shorter than a trigram is fenced (OFFSET 0):
 * otherwise a rare two-letter pattern walks the whole importance index (0.8 s at 100k nodes).
 */
export class GraphNameSearch1763780007200 implements MigrationInterface {
  name = 'GraphNameSearch1763780007200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE OR REPLACE FUNCTION weft_name_matches(p_q text, p_pattern text, p_type text, p_limit int, p_trigram boolean)
RETURNS TABLE (id uuid, match_rank int)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $fn$
BEGIN
  RETURN QUERY EXECUTE format($sql$
    (SELECT x.id, 0 FROM (SELECT n.id, n.importance_score FROM nodes n
       WHERE n.workspace_id = weft_current_workspace() AND NOT n.is_deleted AND lower(n.name) = lower($1)
         AND ($3::text IS NULL OR n.type = $3) OFFSET 0) x
     ORDER BY x.importance_score DESC, x.id LIMIT $4)
    UNION ALL
    (SELECT x.id, 1 FROM (SELECT n.id, n.importance_score FROM nodes n
       WHERE n.workspace_id = weft_current_workspace() AND NOT n.is_deleted AND n.name ILIKE $2
         AND lower(n.name) <> lower($1) AND ($3::text IS NULL OR n.type = $3) %s) x
     ORDER BY x.importance_score DESC, x.id LIMIT $4)$sql$, CASE WHEN p_trigram THEN '' ELSE 'OFFSET 0' END)
  USING p_q, p_pattern, p_type, p_limit;
END
$fn$;
REVOKE ALL ON FUNCTION weft_name_matches(text, text, text, int, boolean) FROM PUBLIC;
`);
    // The app role is the only caller; it learns nothing its own policy would hide.
    const [{ app }] = await q.query(`SELECT string_agg(quote_ident(grantee), ',') AS app FROM (
      SELECT DISTINCT grantee FROM information_schema.role_table_grants WHERE table_name = 'nodes'
        AND privilege_type = 'SELECT'
        AND grantee <> current_user) g`);
    if (app) await q.query(`GRANT EXECUTE ON FUNCTION weft_name_matches(text, text, text, int, boolean) TO ${app}`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS weft_name_matches(text, text, text, int, boolean)`);
  }
}
