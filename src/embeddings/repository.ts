import { toSql } from 'pgvector/pg';
import type { EntityManager } from 'typeorm';
import { affectedRows, queryRows } from '../platform/db/query';
import { Tenant, Workspace } from '../tenancy/entities';

/** What nodes.embedding_error holds when a node is left without a vector. */
export const EMBEDDING_ERRORS = {
  insufficientCredits: 'insufficient_credits',
  providerFailed: 'embedding_provider_failed',
} as const;

/**
 * The embedding pipeline's reads and writes of `nodes`. Raw SQL: nodes carry a pgvector column and
 * are batched by id arrays, which the query builder cannot say.
 */

/** The tenant that pays for a workspace's work, read inside the unit of work (never taken from input). */
export async function tenantOfWorkspace(m: EntityManager, workspaceId: string): Promise<string | undefined> {
  return (await m.getRepository(Workspace).findOneBy({ id: workspaceId }))?.tenantId;
}

/** Whether the workspace's tenant could pay for at least `cost` credits now. */
export async function tenantCanPay(m: EntityManager, workspaceId: string, cost: number): Promise<boolean> {
  const tenantId = await tenantOfWorkspace(m, workspaceId);
  const tenant = tenantId ? await m.getRepository(Tenant).findOneBy({ id: tenantId }) : null;
  return tenant !== null && !tenant.locked && tenant.creditBalance >= cost;
}

/**
 * These nodes, live ones only: their current names, the text to embed and whether they have a
 * vector yet. A node is embedded on its name; a code.* node on its name, signature and doc
 * comment (issue 15), so semantic neighbours share meaning, not just a name.
 */
export const liveNodes = (m: EntityManager, nodeIds: readonly string[]) =>
  queryRows<{ id: string; name: string; text: string; unembedded: boolean }>(
    m,
    `SELECT id, name, embedding IS NULL AS unembedded,
       CASE WHEN type LIKE 'code.%' THEN concat_ws(E'\n', name, properties->>'signature', properties->>'doc')
            ELSE name END AS text
     FROM nodes WHERE id = ANY($1::uuid[]) AND NOT is_deleted`,
    [nodeIds],
  );

/**
 * The scope's live nodes without a vector, older than `minAgeSeconds`, whose embedding is due:
 * never attempted or whose request was lost (no recorded error), the provider failed (an outage
 * passes), or refused for credits when the tenant can pay again (`retryRefused`). Oldest first,
 * read from the unembedded-nodes index.
 */
export async function nodesDueForBackfill(
  m: EntityManager,
  input: { minAgeSeconds: number; retryRefused: boolean; limit: number },
): Promise<string[]> {
  const rows = await queryRows<{ id: string }>(
    m,
    `SELECT id FROM nodes
     WHERE embedding IS NULL AND NOT is_deleted AND created_at <= now() - make_interval(secs => $1)
       AND (embedding_error IS NULL OR embedding_error = $2 OR ($3 AND embedding_error = $4))
     ORDER BY created_at LIMIT $5`,
    [
      input.minAgeSeconds,
      EMBEDDING_ERRORS.providerFailed,
      input.retryRefused,
      EMBEDDING_ERRORS.insufficientCredits,
      input.limit,
    ],
  );
  return rows.map((row) => row.id);
}

/**
 * Workspaces (after `after`, in id order) with a live node older than `minAgeSeconds` and no
 * vector: the definer function `weft_unembedded_workspaces` tells only which, past RLS.
 */
export async function workspacesWithUnembeddedNodes(
  m: EntityManager,
  input: { minAgeSeconds: number; after: string | null; limit: number },
): Promise<string[]> {
  const rows = await queryRows<{ workspace_id: string }>(
    m,
    `SELECT weft_unembedded_workspaces(make_interval(secs => $1), $2::uuid, $3) AS workspace_id`,
    [input.minAgeSeconds, input.after, input.limit],
  );
  return rows.map((row) => row.workspace_id);
}

/**
 * Writes each vector only if the node still has the name that was embedded (a rename in between
 * has its own request). Returns the ids written.
 */
export async function writeEmbeddings(
  m: EntityManager,
  vectors: readonly { id: string; name: string; vector: number[] }[],
): Promise<string[]> {
  const rows = await queryRows<{ id: string }>(
    m,
    `UPDATE nodes n SET embedding = v.embedding::vector, embedding_error = NULL
     FROM unnest($1::uuid[], $2::text[], $3::text[]) AS v(id, name, embedding)
     WHERE n.id = v.id AND n.name = v.name AND NOT n.is_deleted
     RETURNING n.id`,
    [vectors.map((v) => v.id), vectors.map((v) => v.name), vectors.map((v) => toSql(v.vector))],
  );
  return rows.map((row) => row.id);
}

/** Says why these nodes have no vector; `onlyUnembedded` leaves a node that has one (an earlier name's) alone. */
export async function recordEmbeddingError(
  m: EntityManager,
  nodeIds: readonly string[],
  error: string,
  options: { onlyUnembedded?: boolean } = {},
): Promise<number> {
  if (nodeIds.length === 0) return 0;
  return affectedRows(
    m,
    `UPDATE nodes SET embedding_error = $2 WHERE id = ANY($1::uuid[])
     ${options.onlyUnembedded ? 'AND embedding IS NULL' : ''}`,
    [nodeIds, error.slice(0, 500)],
  );
}
