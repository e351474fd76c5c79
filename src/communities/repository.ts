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

/** The stored communities with their members' ids. */
export async function readStored(m: EntityManager, workspaceId: string) {
  return queryRows<{ id: string; memberIds: string[] }>(
    m,
    `SELECT c.id, coalesce(array_agg(e.source_node_id) FILTER (WHERE e.id IS NOT NULL), '{}') AS "memberIds"
     FROM nodes c LEFT JOIN edges e
       ON e.workspace_id = c.workspace_id AND e.target_node_id = c.id AND e.type = $2 AND NOT e.is_deleted
     WHERE c.workspace_id = $1 AND c.type = $3 AND NOT c.is_deleted
     GROUP BY c.id`,
    [workspaceId, MEMBER_OF, COMMUNITY_TYPE],
  );
}

const propertiesOf = (community: DetectedCommunity, topMembers: number, computedAt: string) => ({
  size: community.members.length,
  top_members: community.members.slice(0, topMembers).map((m) => ({
    id: m.id,
    name: m.name,
    type: m.type,
    importance_score: m.importance,
  })),
  member_types: community.types,
  summary: community.summary,
  summary_source: 'extract',
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
    stored: readonly { id: string }[];
    topMembers: number;
    computedAt: string;
  },
): Promise<string[]> {
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
  for (const [index, community] of input.detected.entries()) {
    const properties = JSON.stringify(propertiesOf(community, input.topMembers, input.computedAt));
    const importance = importanceOf(community, input.topMembers);
    const keep = input.keep[index];
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
  return ids;
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
