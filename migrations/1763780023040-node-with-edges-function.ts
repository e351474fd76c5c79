import type { MigrationInterface, QueryRunner } from 'typeorm';
import { NodeEdgesFunction1763780022710 } from './1763780022710-node-edges-function';

/**
 * `ontology.get_node`'s whole read (issue 40, round 3): the live node and up to `p_limit` live edges each
 * way, oldest first, each with the live node at its other end (a loop is outgoing only), as one jsonb.
 * A plpgsql function's statements are planned once per connection, where the scoped read plans its
 * statement on every call (EXECUTE): with the node's own select in here too, that per-call planning is
 * of a bare function call, and the tool's read costs Postgres about what GET /v1/ontology/nodes/{id}'s
 * does. The node's columns are those of NODE_COLUMNS (src/graph/repository.ts); the tool's output schema
 * refuses an answer missing one. SECURITY INVOKER: the caller's policies filter nodes and edges. It
 * replaces weft_node_edges (migration 1763780022710), which planned only the edges once.
 */
export class NodeWithEdgesFunction1763780023040 implements MigrationInterface {
  name = 'NodeWithEdgesFunction1763780023040';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE OR REPLACE FUNCTION weft_node_with_edges(p_node uuid, p_limit int)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = public AS $fn$
BEGIN
  RETURN (SELECT to_jsonb(x) FROM (
    SELECT n.id, n.workspace_id, n.type, n.name, n.properties, n.importance_score, n.base_salience,
      n.reference_count, n.connection_id, n.has_embedding, n.last_touch_at, n.created_at, n.updated_at, n.is_deleted,
      (SELECT coalesce(jsonb_agg(to_jsonb(e) - 'created_at' ORDER BY e.created_at, e.id), '[]') FROM (
        SELECT e.id, e.type, e.source_node_id, e.target_node_id, e.created_at,
               jsonb_build_object('id', o.id, 'type', o.type, 'name', o.name) AS other
        FROM edges e JOIN nodes o ON o.id = e.target_node_id AND NOT o.is_deleted
        WHERE e.workspace_id = n.workspace_id AND e.source_node_id = n.id AND NOT e.is_deleted
        ORDER BY e.created_at, e.id LIMIT p_limit) e) AS outgoing,
      (SELECT coalesce(jsonb_agg(to_jsonb(e) - 'created_at' ORDER BY e.created_at, e.id), '[]') FROM (
        SELECT e.id, e.type, e.source_node_id, e.target_node_id, e.created_at,
               jsonb_build_object('id', o.id, 'type', o.type, 'name', o.name) AS other
        FROM edges e JOIN nodes o ON o.id = e.source_node_id AND NOT o.is_deleted
        WHERE e.workspace_id = n.workspace_id AND e.target_node_id = n.id AND NOT e.is_deleted
          AND e.source_node_id <> n.id
        ORDER BY e.created_at, e.id LIMIT p_limit) e) AS incoming
    FROM nodes n WHERE n.id = p_node AND NOT n.is_deleted) x);
END
$fn$;
REVOKE ALL ON FUNCTION weft_node_with_edges(uuid, int) FROM PUBLIC;
`);
    // The app role is the only caller; its own policies apply inside.
    const [{ app }] = await q.query(`SELECT string_agg(quote_ident(grantee), ',') AS app FROM (
      SELECT DISTINCT grantee FROM information_schema.role_table_grants WHERE table_name = 'nodes'
        AND privilege_type = 'SELECT'
        AND grantee <> current_user) g`);
    if (app) await q.query(`GRANT EXECUTE ON FUNCTION weft_node_with_edges(uuid, int) TO ${app}`);
    await q.query(`DROP FUNCTION IF EXISTS weft_node_edges(uuid, uuid, boolean, int)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await new NodeEdgesFunction1763780022710().up(q);
    await q.query(`DROP FUNCTION IF EXISTS weft_node_with_edges(uuid, int)`);
  }
}
