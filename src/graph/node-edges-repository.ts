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
    // The edges come from weft_node_edges, whose statements are planned once per connection (the scoped
    // read plans its own on every call): each up to $2 + 1 live edges, oldest first, with their other end.
    `SELECT ${NODE_COLUMNS},
       weft_node_edges(n.workspace_id, n.id, false, $2::int + 1) AS outgoing,
       weft_node_edges(n.workspace_id, n.id, true, $2::int + 1) AS incoming
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
