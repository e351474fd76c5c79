import { as } from './http';

/** Graph fixtures through the API: a node's id, or an edge's. */
export async function createNode(token: string, type: string, name: string): Promise<string> {
  const created = await as(token).post('/v1/ontology/nodes', { type, name });
  if (created.status !== 201) throw new Error(`node not created: ${created.status} ${created.text}`);
  return created.body.id;
}

export async function createEdge(token: string, source: string, target: string, type = 'CONTAINS'): Promise<string> {
  const created = await as(token).post('/v1/ontology/edges', { type, source_node_id: source, target_node_id: target });
  if (created.status !== 201) throw new Error(`edge not created: ${created.status} ${created.text}`);
  return created.body.id;
}
