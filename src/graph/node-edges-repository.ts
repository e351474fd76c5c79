import type { Scope, ScopedRead } from '../platform/db/unit-of-work';
import type { NodeRow } from './repository';
import { NODE_COLUMNS } from './repository';

/* A node with its edges each way, as `ontology.get_node` reads it: one scoped statement. */

/** An edge beside a node, with the live node at its other end (`ontology.get_node`). */
export interface NodeEdgeRow {
  id: string;
  type: string;
  source_node_id: string;
  target_node_id: string;
  other: { id: string; type: string; name: string };
}

/** Up to $2 + 1 live edges one way from `n`, each with its live other end, oldest first. */
const nodeEdgesSql = (from: 'source_node_id' | 'target_node_id', to: 'source_node_id' | 'target_node_id') => `
  (SELECT coalesce(json_agg(x ORDER BY x.created_at, x.id), '[]') FROM (
     SELECT e.id, e.type, e.source_node_id, e.target_node_id, e.created_at,
            json_build_object('id', o.id, 'type', o.type, 'name', o.name) AS other
     FROM edges e JOIN nodes o ON o.id = e.${to} AND NOT o.is_deleted
     WHERE e.workspace_id = n.workspace_id AND e.${from} = n.id AND NOT e.is_deleted
       ${from === 'target_node_id' ? 'AND e.source_node_id <> n.id' : ''}
     ORDER BY e.created_at, e.id LIMIT $2::int + 1) x)`;

/**
 * A live node with up to `edgeLimit + 1` live edges each way (the extra one only tells that the list
 * was cut), in one statement: `ontology.get_node`'s read of today. A loop is outgoing only.
 */
export async function readLiveNodeWithEdges(
  read: ScopedRead,
  scope: Scope,
  nodeId: string,
  edgeLimit: number,
): Promise<(NodeRow & { outgoing: NodeEdgeRow[]; incoming: NodeEdgeRow[] }) | undefined> {
  const [row] = await read<NodeRow & { outgoing: NodeEdgeRow[]; incoming: NodeEdgeRow[] }>(
    scope,
    `SELECT ${NODE_COLUMNS},
       ${nodeEdgesSql('source_node_id', 'target_node_id')} AS outgoing,
       ${nodeEdgesSql('target_node_id', 'source_node_id')} AS incoming
     FROM nodes n WHERE n.id = $1::uuid AND NOT n.is_deleted`,
    [nodeId, edgeLimit],
  );
  if (!row) return undefined;
  // Each edge row also carries its created_at (the order); the answer does not.
  const edge = ({ id, type, source_node_id, target_node_id, other }: NodeEdgeRow) => ({
    id,
    type,
    source_node_id,
    target_node_id,
    other,
  });
  return { ...row, outgoing: row.outgoing.map(edge), incoming: row.incoming.map(edge) };
}
