import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `ontology.get_node`'s edges each way (issue 40), as a function whose statements Postgres plans once
 * per connection: the scoped read runs its statement through EXECUTE, planned on every call, and the two
 * edge subqueries made that planning (≈ 0.7 ms) most of the tool's database time, three times the route's
 * whole read. SECURITY INVOKER: the caller's policies filter edges and nodes as in the statement it
 * replaces; the workspace it is given is the node's, read under those policies. Up to `p_limit` live edges
 * one way, oldest first, each with the live node at its other end (a loop is outgoing only).
 */
export class NodeEdgesFunction1763780022710 implements MigrationInterface {
  name = 'NodeEdgesFunction1763780022710';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE OR REPLACE FUNCTION weft_node_edges(p_workspace uuid, p_node uuid, p_incoming boolean, p_limit int)
RETURNS json
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = public AS $fn$
BEGIN
  IF p_incoming THEN
    RETURN (SELECT coalesce(json_agg(x ORDER BY x.created_at, x.id), '[]') FROM (
      SELECT e.id, e.type, e.source_node_id, e.target_node_id, e.created_at,
             json_build_object('id', o.id, 'type', o.type, 'name', o.name) AS other
      FROM edges e JOIN nodes o ON o.id = e.source_node_id AND NOT o.is_deleted
      WHERE e.workspace_id = p_workspace AND e.target_node_id = p_node AND NOT e.is_deleted
        AND e.source_node_id <> p_node
      ORDER BY e.created_at, e.id LIMIT p_limit) x);
  END IF;
  RETURN (SELECT coalesce(json_agg(x ORDER BY x.created_at, x.id), '[]') FROM (
    SELECT e.id, e.type, e.source_node_id, e.target_node_id, e.created_at,
           json_build_object('id', o.id, 'type', o.type, 'name', o.name) AS other
    FROM edges e JOIN nodes o ON o.id = e.target_node_id AND NOT o.is_deleted
    WHERE e.workspace_id = p_workspace AND e.source_node_id = p_node AND NOT e.is_deleted
    ORDER BY e.created_at, e.id LIMIT p_limit) x);
END
$fn$;
REVOKE ALL ON FUNCTION weft_node_edges(uuid, uuid, boolean, int) FROM PUBLIC;
`);
    // The app role is the only caller; its own policies apply inside.
    const [{ app }] = await q.query(`SELECT string_agg(quote_ident(grantee), ',') AS app FROM (
      SELECT DISTINCT grantee FROM information_schema.role_table_grants WHERE table_name = 'nodes'
        AND privilege_type = 'SELECT'
        AND grantee <> current_user) g`);
    if (app) await q.query(`GRANT EXECUTE ON FUNCTION weft_node_edges(uuid, uuid, boolean, int) TO ${app}`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS weft_node_edges(uuid, uuid, boolean, int)`);
  }
}
