import type { EntityManager } from 'typeorm';
import { queryRows } from '../platform/db/query';
import type { DetectedCommunity, Link, MemberNode } from './detect';

export const COMMUNITY_TYPE = 'community';
export const MEMBER_OF = 'MEMBER_OF';

export interface PassRow {
  computed_at: Date;
  node_count: number;
  edge_count: number;
  community_count: number;
  modularity: number;
}

/** The last pass, locked for this transaction: one pass per workspace at a time. */
export async function lockPass(m: EntityManager, workspaceId: string): Promise<PassRow | null> {
  await queryRows(m, `SELECT pg_advisory_xact_lock(hashtextextended('community-pass:' || $1, 0))`, [workspaceId]);
  const [row] = await queryRows<PassRow>(
    m,
    `SELECT computed_at, node_count, edge_count, community_count, modularity FROM community_passes
     WHERE workspace_id = $1`,
    [workspaceId],
  );
  return row ?? null;
}

/**
 * Claims the workspace's forced refresh (review NL-6): moves its time to now unless the last one is
 * less than `cooldownSeconds` old. The upsert's row lock makes a concurrent claim wait and then see
 * the new time. Answers null when claimed, else how many seconds are left of the cooldown.
 */
export async function claimForcedRefresh(
  m: EntityManager,
  workspaceId: string,
  cooldownSeconds: number,
): Promise<{ retryAfterSeconds: number } | null> {
  const claimed = await queryRows(
    m,
    `INSERT INTO community_forced_refreshes (workspace_id, requested_at) VALUES ($1, now())
     ON CONFLICT (workspace_id) DO UPDATE SET requested_at = now()
       WHERE community_forced_refreshes.requested_at <= now() - make_interval(secs => $2)
     RETURNING requested_at`,
    [workspaceId, cooldownSeconds],
  );
  if (claimed.length > 0) return null;
  const [left] = await queryRows<{ seconds: number }>(
    m,
    `SELECT ceil(extract(epoch FROM requested_at + make_interval(secs => $2) - now()))::int AS seconds
     FROM community_forced_refreshes WHERE workspace_id = $1`,
    [workspaceId, cooldownSeconds],
  );
  return { retryAfterSeconds: Math.max(1, left?.seconds ?? cooldownSeconds) };
}

/** Nodes and edges (communities and MEMBER_OF aside) added or deleted since `since`. */
export async function changesSince(m: EntityManager, workspaceId: string, since: Date): Promise<number> {
  const [row] = await queryRows<{ changes: string }>(
    m,
    `SELECT (SELECT count(*) FROM nodes WHERE workspace_id = $1 AND type <> $3
               AND (created_at > $2 OR deleted_at > $2))
          + (SELECT count(*) FROM edges WHERE workspace_id = $1 AND type <> $4
               AND (created_at > $2 OR deleted_at > $2)) AS changes`,
    [workspaceId, since, COMMUNITY_TYPE, MEMBER_OF],
  );
  return Number(row?.changes ?? 0);
}

/** The graph a pass sees: the `maxNodes` most important live nodes and the live edges among all nodes. */
export async function readGraph(
  m: EntityManager,
  workspaceId: string,
  maxNodes: number,
): Promise<{ nodes: MemberNode[]; links: Link[]; edgeCount: number }> {
  const nodes = await queryRows<MemberNode>(
    m,
    `SELECT id, name, type, importance_score AS importance FROM nodes
     WHERE workspace_id = $1 AND NOT is_deleted AND type <> $2
     ORDER BY importance_score DESC, id LIMIT $3`,
    [workspaceId, COMMUNITY_TYPE, maxNodes],
  );
  const links = await queryRows<Link>(
    m,
    `SELECT source_node_id AS source, target_node_id AS target FROM edges
     WHERE workspace_id = $1 AND NOT is_deleted AND type <> $2`,
    [workspaceId, MEMBER_OF],
  );
  return { nodes, links, edgeCount: links.length };
}

/** How a community's summary was made and whether it is current (docs/behaviour.md "Communities"). */
export interface SummaryFields {
  summary: string;
  /** `extract`: the deterministic extract; `model`: written by the hosted model. */
  summary_source: 'extract' | 'model';
  /** `pending`: membership changed, the model has yet to write it; `failed`: the model failed, the summary shown
   * is the previous one (`model`) or the extract, `summary_error` says why. */
  summary_status: 'current' | 'pending' | 'failed';
  summary_model?: string;
  summary_error?: string;
  summarised_at?: string;
}

export interface StoredCommunity {
  id: string;
  memberIds: string[];
  summary: SummaryFields | null;
}

/** The stored communities with their members' ids and their summary fields. */
export async function readStored(m: EntityManager, workspaceId: string): Promise<StoredCommunity[]> {
  const rows = await queryRows<{ id: string; memberIds: string[]; properties: Record<string, unknown> }>(
    m,
    `SELECT c.id, c.properties,
            coalesce(array_agg(e.source_node_id) FILTER (WHERE e.id IS NOT NULL), '{}') AS "memberIds"
     FROM nodes c LEFT JOIN edges e
       ON e.workspace_id = c.workspace_id AND e.target_node_id = c.id AND e.type = $2 AND NOT e.is_deleted
     WHERE c.workspace_id = $1 AND c.type = $3 AND NOT c.is_deleted
     GROUP BY c.id`,
    [workspaceId, MEMBER_OF, COMMUNITY_TYPE],
  );
  return rows.map((row) => ({ id: row.id, memberIds: row.memberIds, summary: summaryFieldsOf(row.properties) }));
}

function summaryFieldsOf(properties: Record<string, unknown>): SummaryFields | null {
  if (typeof properties.summary !== 'string') return null;
  const fields: SummaryFields = {
    summary: properties.summary,
    summary_source: properties.summary_source === 'model' ? 'model' : 'extract',
    summary_status:
      properties.summary_status === 'pending' || properties.summary_status === 'failed'
        ? properties.summary_status
        : 'current',
  };
  for (const key of ['summary_model', 'summary_error', 'summarised_at'] as const) {
    if (typeof properties[key] === 'string') fields[key] = properties[key] as string;
  }
  return fields;
}

const sameMembers = (a: readonly string[], b: readonly { id: string }[]) => {
  if (a.length !== b.length) return false;
  const set = new Set(a);
  return b.every((member) => set.has(member.id));
};

/**
 * The summary fields a detected community is written with. With the local model: the extract,
 * current. With a hosted model: a community whose membership is unchanged keeps its model summary;
 * any other (new, changed, or whose last attempt failed) is `pending`, showing meanwhile its previous
 * model summary if it had one, else the extract, until `summarisePending` asks the model.
 */
export function summaryFor(
  community: DetectedCommunity,
  stored: StoredCommunity | undefined,
  mode: 'extract' | 'model',
): SummaryFields {
  const extract: SummaryFields = { summary: community.summary, summary_source: 'extract', summary_status: 'current' };
  if (mode === 'extract') return extract;
  const previous = stored?.summary;
  const unchanged = stored !== undefined && sameMembers(stored.memberIds, community.members);
  if (unchanged && previous?.summary_source === 'model' && previous.summary_status === 'current') return previous;
  if (previous?.summary_source === 'model') {
    const { summary_error: _dropped, ...kept } = previous;
    return { ...kept, summary_status: 'pending' };
  }
  return { ...extract, summary_status: 'pending' };
}

const propertiesOf = (
  community: DetectedCommunity,
  topMembers: number,
  computedAt: string,
  summary: SummaryFields,
) => ({
  size: community.members.length,
  top_members: community.members.slice(0, topMembers).map((m) => ({
    id: m.id,
    name: m.name,
    type: m.type,
    importance_score: m.importance,
  })),
  member_types: community.types,
  ...summary,
  algorithm: 'louvain',
  computed_at: computedAt,
});

/** A community's own importance: the mean of its top members'. */
const importanceOf = (community: DetectedCommunity, topMembers: number) => {
  const top = community.members.slice(0, topMembers);
  return top.reduce((sum, m) => sum + m.importance, 0) / top.length;
};

/**
 * Replaces the stored communities with `detected`: a community matched to a stored one (`keep`)
 * updates that node in place, the others are new nodes; stored ones left unmatched are deleted.
 * MEMBER_OF edges are derived data: only the ones that changed are deleted (not soft-deleted) or
 * added, since every edge written or removed also rewrites its member's degree counters.
 */
export async function writeCommunities(
  m: EntityManager,
  input: {
    workspaceId: string;
    detected: readonly DetectedCommunity[];
    keep: readonly (string | null)[];
    stored: readonly StoredCommunity[];
    topMembers: number;
    computedAt: string;
    /** `model` when a hosted model writes the summaries (changed communities become `pending`). */
    summaries: 'extract' | 'model';
  },
): Promise<{ ids: string[]; pending: number }> {
  const { workspaceId } = input;
  const storedIds = input.stored.map((s) => s.id);
  const kept = new Set(input.keep.filter((id): id is string => id !== null));
  const gone = storedIds.filter((id) => !kept.has(id));
  if (gone.length > 0) {
    await queryRows(
      m,
      `UPDATE nodes SET is_deleted = true, deleted_at = now(), updated_at = now()
       WHERE workspace_id = $1 AND id = ANY($2::uuid[])`,
      [workspaceId, gone],
    );
  }
  const ids: string[] = [];
  const storedById = new Map(input.stored.map((s) => [s.id, s]));
  let pending = 0;
  for (const [index, community] of input.detected.entries()) {
    const keep = input.keep[index];
    const summary = summaryFor(community, keep ? storedById.get(keep) : undefined, input.summaries);
    if (summary.summary_status === 'pending') pending++;
    const properties = JSON.stringify(propertiesOf(community, input.topMembers, input.computedAt, summary));
    const importance = importanceOf(community, input.topMembers);
    const [row] = keep
      ? await queryRows<{ id: string }>(
          m,
          `UPDATE nodes SET name = $3, properties = $4::jsonb, importance_score = $5, updated_at = now(),
                  last_touch_at = now()
           WHERE workspace_id = $1 AND id = $2 RETURNING id`,
          [workspaceId, keep, community.name, properties, importance],
        )
      : await queryRows<{ id: string }>(
          m,
          `INSERT INTO nodes (workspace_id, type, name, properties, importance_score)
           VALUES ($1, $2, $3, $4::jsonb, $5) RETURNING id`,
          [workspaceId, COMMUNITY_TYPE, community.name, properties, importance],
        );
    ids.push(row!.id);
  }
  const sources: string[] = [];
  const targets: string[] = [];
  input.detected.forEach((community, index) => {
    for (const member of community.members) {
      sources.push(member.id);
      targets.push(ids[index]!);
    }
  });
  if (storedIds.length > 0) {
    await queryRows(
      m,
      `DELETE FROM edges e WHERE e.workspace_id = $1 AND e.type = $2 AND e.target_node_id = ANY($3::uuid[])
         AND (e.source_node_id, e.target_node_id) NOT IN (SELECT s, t FROM unnest($4::uuid[], $5::uuid[]) AS x(s, t))`,
      [workspaceId, MEMBER_OF, storedIds, sources, targets],
    );
  }
  if (sources.length > 0) {
    await queryRows(
      m,
      `INSERT INTO edges (workspace_id, type, source_node_id, target_node_id)
       SELECT $1, $2, x.s, x.t FROM unnest($3::uuid[], $4::uuid[]) AS x(s, t)
       WHERE (x.s, x.t) NOT IN (SELECT e.source_node_id, e.target_node_id FROM edges e
                                WHERE e.workspace_id = $1 AND e.type = $2 AND NOT e.is_deleted
                                  AND e.target_node_id = ANY($4::uuid[]))`,
      [workspaceId, MEMBER_OF, sources, targets],
    );
  }
  return { ids, pending };
}

export async function recordPass(m: EntityManager, workspaceId: string, pass: PassRow): Promise<void> {
  await queryRows(
    m,
    `INSERT INTO community_passes (workspace_id, computed_at, node_count, edge_count, community_count, modularity)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (workspace_id) DO UPDATE SET computed_at = EXCLUDED.computed_at, node_count = EXCLUDED.node_count,
       edge_count = EXCLUDED.edge_count, community_count = EXCLUDED.community_count, modularity = EXCLUDED.modularity`,
    [workspaceId, pass.computed_at, pass.node_count, pass.edge_count, pass.community_count, pass.modularity],
  );
}

/** The stored communities, most important first, for overviews and global questions. */
export async function listCommunities(m: EntityManager, workspaceId: string, limit: number) {
  return queryRows<{ id: string; name: string; importance_score: number; properties: Record<string, unknown> }>(
    m,
    `SELECT id, name, importance_score, properties FROM nodes
     WHERE workspace_id = $1 AND type = $2 AND NOT is_deleted
     ORDER BY importance_score DESC, id LIMIT $3`,
    [workspaceId, COMMUNITY_TYPE, limit],
  );
}

/** Communities waiting for the model's summary, most important first. */
export async function pendingSummaries(m: EntityManager, workspaceId: string, limit: number) {
  return queryRows<{ id: string; name: string; properties: Record<string, unknown> }>(
    m,
    `SELECT id, name, properties FROM nodes
     WHERE workspace_id = $1 AND type = $2 AND NOT is_deleted AND properties->>'summary_status' = 'pending'
     ORDER BY importance_score DESC, id LIMIT $3`,
    [workspaceId, COMMUNITY_TYPE, limit],
  );
}

/** A community's most important live members. */
export async function topMembersOf(m: EntityManager, workspaceId: string, communityId: string, limit: number) {
  return queryRows<{ name: string; type: string; importance_score: number }>(
    m,
    `SELECT n.name, n.type, n.importance_score FROM edges e
     JOIN nodes n ON n.workspace_id = e.workspace_id AND n.id = e.source_node_id AND NOT n.is_deleted
     WHERE e.workspace_id = $1 AND e.target_node_id = $2 AND e.type = $3 AND NOT e.is_deleted
     ORDER BY n.importance_score DESC, n.id LIMIT $4`,
    [workspaceId, communityId, MEMBER_OF, limit],
  );
}

/**
 * Stores the model's answer (or its failure) on a pending community, only if no later pass rewrote
 * it meanwhile (same `computed_at`, still pending); true when it did.
 */
export async function writeSummary(
  m: EntityManager,
  workspaceId: string,
  communityId: string,
  computedAt: string,
  fields: Partial<SummaryFields>,
): Promise<boolean> {
  const rows = await queryRows<{ id: string }>(
    m,
    `UPDATE nodes SET properties = (properties - 'summary_error') || $4::jsonb, updated_at = now()
     WHERE workspace_id = $1 AND id = $2 AND NOT is_deleted
       AND properties->>'computed_at' = $3 AND properties->>'summary_status' = 'pending'
     RETURNING id`,
    [workspaceId, communityId, computedAt, JSON.stringify(fields)],
  );
  return rows.length > 0;
}

/** The transaction's time: what now() writes into every row of this pass. */
export const transactionNow = async (m: EntityManager): Promise<Date> =>
  (await queryRows<{ now: Date }>(m, `SELECT now() AS now`))[0]!.now;
