import type { Scope, ScopedRead } from '../platform/db/unit-of-work';
import type { NodeRow } from './repository';

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
  // All of it in weft_node_with_edges, whose statements are planned once per connection (the scoped read
  // plans its own statement, here a bare call, on every call): the node's columns are NODE_COLUMNS'.
  const [row] = await read<{ found: (NodeRow & { outgoing: NodeEdgeRow[]; incoming: NodeEdgeRow[] }) | null }>(
    scope,
    `SELECT weft_node_with_edges($1::uuid, $2::int + 1) AS found`,
    [nodeId, edgeLimit],
  );
  return row?.found ?? undefined;
}
