import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { queryRows } from '../platform/db/query';
import type { ScopedRead, UnitOfWork } from '../platform/db/unit-of-work';
import { BadRequestError, NotFoundError } from '../platform/errors';
import { createEdgeInTransaction } from './node-writes';
import type { EdgeCreateRequest, EdgeListQuery, EdgeResponse, EdgeRow } from './schemas';
import { EDGE_COLUMNS, toEdgeResponse } from './schemas';

/** Edge reads and writes, in the caller's workspace unit of work. */
export function createEdgeService(deps: { uow: UnitOfWork; read: ScopedRead }) {
  const { uow, read } = deps;

  /**
   * Contract 4.1: 400 when the two nodes are in different workspaces. A node this workspace
   * cannot see is 404, unless it lives in another workspace the caller is a member of: then the
   * caller already knows it exists and the useful answer is the 400. Strangers still get 404.
   */
  async function inOtherWorkspaceOfCaller(principal: Principal, nodeIds: string[]): Promise<boolean> {
    const others: { workspace_id: string }[] = await uow({ userId: principal.userId }, (m) =>
      m.query(`SELECT workspace_id FROM memberships WHERE user_id = $1 AND workspace_id <> $2`, [
        principal.userId,
        principal.workspaceId,
      ]),
    );
    for (const { workspace_id: workspaceId } of others) {
      const [hit] = await uow({ workspaceId, userId: principal.userId }, (m) =>
        m.query(`SELECT 1 FROM nodes WHERE id = ANY($1::uuid[]) AND NOT is_deleted LIMIT 1`, [nodeIds]),
      );
      if (hit) return true;
    }
    return false;
  }

  return {
    async create(principal: Principal, body: EdgeCreateRequest): Promise<EdgeResponse> {
      try {
        const row = await uow(scopeOf(principal), (m) => createEdgeInTransaction(m, principal.workspaceId, body));
        return toEdgeResponse(row);
      } catch (error) {
        const missing = error instanceof NotFoundError ? (error.detail as { node_ids?: string[] }).node_ids : undefined;
        if (missing && (await inOtherWorkspaceOfCaller(principal, missing))) {
          throw new BadRequestError({
            error: 'cross_workspace_edge',
            message: 'Source and target nodes are in different workspaces',
          });
        }
        throw error;
      }
    },

    async get(principal: Principal, edgeId: string): Promise<EdgeResponse> {
      const [row] = await read<EdgeRow>(
        scopeOf(principal),
        `SELECT ${EDGE_COLUMNS} FROM edges e WHERE e.id = $1::uuid AND NOT e.is_deleted`,
        [edgeId],
      );
      if (!row) throw new NotFoundError('Edge not found');
      return toEdgeResponse(row);
    },

    async list(principal: Principal, query: EdgeListQuery): Promise<EdgeResponse[]> {
      const rows = await read<EdgeRow>(
        scopeOf(principal),
        `SELECT ${EDGE_COLUMNS} FROM edges e
         WHERE NOT e.is_deleted AND ($1::uuid IS NULL OR e.source_node_id = $1::uuid) AND ($2::uuid IS NULL OR e.target_node_id = $2::uuid)
           AND ($3::text IS NULL OR e.type = $3::text)
         ORDER BY e.created_at, e.id LIMIT $4::int OFFSET $5::int`,
        [query.source_node_id ?? null, query.target_node_id ?? null, query.type ?? null, query.limit, query.offset],
      );
      return rows.map(toEdgeResponse);
    },

    /** Soft delete; answers with the deleted row. */
    async remove(principal: Principal, edgeId: string): Promise<EdgeResponse> {
      const [row]: EdgeRow[] = await uow(scopeOf(principal), (m) =>
        queryRows(
          m,
          `UPDATE edges e SET is_deleted = true, deleted_at = now() WHERE e.id = $1 AND NOT e.is_deleted RETURNING ${EDGE_COLUMNS}`,
          [edgeId],
        ),
      );
      if (!row) throw new NotFoundError('Edge not found');
      return toEdgeResponse(row);
    },
  };
}

export type EdgeService = ReturnType<typeof createEdgeService>;
