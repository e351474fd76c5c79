import type { EntityManager } from 'typeorm';
import { importanceSql, importanceSqlParams } from '../importance/formula';
import { baseSalienceFor } from '../importance/salience';
import type { ImportanceSettings } from '../ontology-config/schemas';
import { readOntologyConfig } from '../ontology-config/service';
import { queryRows } from '../platform/db/query';
import { NotFoundError } from '../platform/errors';
import { enqueueOutboxEvent } from '../platform/outbox/relay';
import { registerType } from '../type-catalog/register';
import type { EdgeRow, NodeRow } from './schemas';
import { EDGE_COLUMNS, NODE_COLUMNS } from './schemas';

export interface NodeCreateInput {
  type: string;
  name: string;
  properties?: Record<string, unknown>;
  connection_id?: string | null;
  /** Defaults to the per-type salience table. */
  base_salience?: number;
}

export interface EdgeCreateInput {
  type: string;
  source_node_id: string;
  target_node_id: string;
  properties?: Record<string, unknown>;
  reasoning?: string | null;
  evidence?: string | null;
}

/** Callers creating many rows in one unit of work can pass the settings once. */
export interface WriteOptions {
  importance?: ImportanceSettings;
  /**
   * False when the caller emits `node.created` itself later (`enqueueNodeCreated`): a prompt emits
   * it when it completes, so the nodes of a prompt that is undone are never embedded or resolved.
   */
  emitCreated?: boolean;
}

const settingsOf = async (m: EntityManager, options?: WriteOptions) =>
  options?.importance ?? (await readOntologyConfig(m)).importance;

/**
 * Everything a node creation does, inside the caller's unit of work: base_salience from the
 * per-type table, the initial importance (the formula at age 0), catalog registration on first
 * sight, and `node.created` in the outbox. The caller kicks the outbox after its commit.
 */
export async function createNodeInTransaction(
  m: EntityManager,
  workspaceId: string,
  input: NodeCreateInput,
  options?: WriteOptions,
): Promise<NodeRow> {
  const settings = await settingsOf(m, options);
  const salience = input.base_salience ?? baseSalienceFor(input.type);
  const [row]: NodeRow[] = await m.query(
    `INSERT INTO nodes AS n (workspace_id, type, name, properties, connection_id, base_salience, importance_score)
     VALUES ($1, $2, $3, $4, $5, $6, LEAST($8::float8, GREATEST($7::float8, $6::float8)))
     RETURNING ${NODE_COLUMNS}`,
    [
      workspaceId,
      input.type,
      input.name,
      JSON.stringify(input.properties ?? {}),
      input.connection_id ?? null,
      salience,
      settings.min_importance,
      settings.max_importance,
    ],
  );
  await registerType(m, workspaceId, 'node', input.type);
  if (options?.emitCreated !== false) await enqueueNodeCreated(m, workspaceId, row!);
  return row!;
}

/** `node.created` in the outbox, in the caller's transaction; the caller kicks the outbox after its commit. */
export const enqueueNodeCreated = (
  m: EntityManager,
  workspaceId: string,
  node: { id: string; type: string; name: string },
): Promise<void> =>
  enqueueOutboxEvent(m, {
    workspaceId,
    eventType: 'node.created',
    aggregateId: node.id,
    payload: { node_id: node.id, type: node.type, name: node.name },
  });

async function touch(m: EntityManager, nodeIds: readonly string[], options?: WriteOptions): Promise<string[]> {
  // Sorted, so that two transactions touching the same hubs lock them in the same order.
  const ids = [...new Set(nodeIds)].sort();
  if (ids.length === 0) return [];
  const settings = await settingsOf(m, options);
  const rows: { id: string }[] = await queryRows(
    m,
    `UPDATE nodes n SET reference_count = n.reference_count + 1, last_touch_at = now(),
       importance_score = ${importanceSql(2, { referenceCount: '(n.reference_count + 1)', lastTouchAt: 'now()' })}
     WHERE n.id = ANY($1::uuid[]) AND NOT n.is_deleted
     RETURNING n.id`,
    [ids, ...importanceSqlParams(settings)],
  );
  return rows.map((row) => row.id);
}

/**
 * Counts one reference of each node (citations, edge ends): reference_count + 1, last_touch_at
 * = now(), and importance recomputed with the new values. Live nodes only; ids are deduplicated.
 * Returns how many nodes were touched.
 */
export async function touchNodes(
  m: EntityManager,
  nodeIds: readonly string[],
  options?: WriteOptions,
): Promise<number> {
  return (await touch(m, nodeIds, options)).length;
}

/**
 * Everything an edge creation does, inside the caller's unit of work: both ends must be live
 * nodes visible to this workspace (else 404), catalog registration, and one reference of each end.
 */
export async function createEdgeInTransaction(
  m: EntityManager,
  workspaceId: string,
  input: EdgeCreateInput,
  options?: WriteOptions,
): Promise<EdgeRow> {
  // Touching first both counts the reference and locks the live ends, so a concurrent delete
  // cannot leave this edge pointing at a deleted node; a failure below rolls the touch back.
  const found = new Set(await touch(m, [input.source_node_id, input.target_node_id], options));
  const missing = [input.source_node_id, input.target_node_id].filter((id) => !found.has(id));
  if (missing.length > 0) throw new NotFoundError({ error: 'node_not_found', node_ids: [...new Set(missing)] });
  const [row]: EdgeRow[] = await m.query(
    `INSERT INTO edges AS e (workspace_id, type, source_node_id, target_node_id, properties, reasoning, evidence)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     RETURNING ${EDGE_COLUMNS}`,
    [
      workspaceId,
      input.type,
      input.source_node_id,
      input.target_node_id,
      JSON.stringify(input.properties ?? {}),
      input.reasoning ?? null,
      input.evidence ?? null,
    ],
  );
  await registerType(m, workspaceId, 'edge', input.type);
  return row!;
}
