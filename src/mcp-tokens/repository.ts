import type { EntityManager } from 'typeorm';
import { queryFirst } from '../platform/db/query';

/** The name of the rows `POST /v1/mcp/token` writes; the mint limit counts only these. */
export const MINT_NAME = 'mcp-mint';

/**
 * Serialises one user's mints until the transaction ends, so that counting recent mints and
 * inserting the next one cannot interleave (an advisory lock: nothing the query builder says).
 */
export async function lockUserMints(m: EntityManager, userId: string): Promise<void> {
  await queryFirst(m, `SELECT pg_advisory_xact_lock(hashtextextended('mcp-mint:' || $1, 0))`, [userId]);
}

/** How many mints the user made in the last `windowSeconds`, and when the oldest of them was. */
export async function recentMints(
  m: EntityManager,
  userId: string,
  windowSeconds: number,
): Promise<{ count: number; oldest: Date | null }> {
  // Keyed by user across all workspaces; RLS shows the scope's user only, as the filter restates.
  const row = await queryFirst<{ count: number; oldest: Date | null }>(
    m,
    `SELECT count(*)::int AS count, min(created_at) AS oldest FROM api_keys
     WHERE user_id = $1 AND kind = 'mcp_token' AND name = $2 AND created_at > now() - make_interval(secs => $3)`,
    [userId, MINT_NAME, windowSeconds],
  );
  return { count: row?.count ?? 0, oldest: row?.oldest ?? null };
}
