import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { ScopedRead, UnitOfWork } from '../platform/db/unit-of-work';
import { BadRequestError, NotFoundError } from '../platform/errors';
import { otherWorkspacesOf } from '../tenancy/repository';
import { anyLiveNode, readEdgePage, readLiveEdge, softDeleteEdge, toEdgeResponse } from './repository';
import type { EdgeCreateRequest, EdgeListQuery, EdgeResponse } from './schemas';
import { createEdgeInTransaction } from './writes';

/** Edge reads and writes, in the caller's workspace unit of work. */
export function createEdgeService(deps: { uow: UnitOfWork; read: ScopedRead }) {
  const { uow, read } = deps;

  /**
   * knowledge-graph-service-api.md §4.1: 400 when the two nodes are in different workspaces. A node this workspace
   * cannot see is 404, unless it lives in another workspace the caller may act in: then the
   * caller already knows it exists and the useful answer is the 400. Only a user JWT reaches the
   * user's other workspaces; a key or MCP token is bound to one, so for it (as for strangers) the
   * other workspaces' contents stay unknown: 404, or a 400 would tell what they hold.
   */
  async function inOtherWorkspaceOfCaller(principal: Principal, nodeIds: string[]): Promise<boolean> {
    if (principal.credential.kind !== 'user_jwt') return false;
    const others = await uow({ userId: principal.userId }, (m) =>
      otherWorkspacesOf(m, principal.userId, principal.workspaceId),
    );
    for (const workspaceId of others) {
      if (await uow({ workspaceId, userId: principal.userId }, (m) => anyLiveNode(m, nodeIds))) return true;
    }
    return false;
  }

  return {
    async create(principal: Principal, body: EdgeCreateRequest): Promise<EdgeResponse> {
      try {
        const row = await uow(scopeOf(principal), (m) => createEdgeInTransaction(m, principal.workspaceId, body));
        return toEdgeResponse(row);
      } catch (error) {
        if (
          error instanceof NotFoundError &&
          (await inOtherWorkspaceOfCaller(principal, [body.source_node_id, body.target_node_id]))
        ) {
          throw new BadRequestError({
            error: 'cross_workspace_edge',
            message: 'Source and target nodes are in different workspaces',
          });
        }
        throw error;
      }
    },

    async get(principal: Principal, edgeId: string): Promise<EdgeResponse> {
      const row = await readLiveEdge(read, scopeOf(principal), edgeId);
      if (!row) throw new NotFoundError('Edge not found');
      return toEdgeResponse(row);
    },

    async list(principal: Principal, query: EdgeListQuery): Promise<EdgeResponse[]> {
      const rows = await readEdgePage(read, scopeOf(principal), {
        sourceNodeId: query.source_node_id ?? null,
        targetNodeId: query.target_node_id ?? null,
        type: query.type ?? null,
        limit: query.limit,
        offset: query.offset,
      });
      return rows.map(toEdgeResponse);
    },

    /** Soft delete; answers with the deleted row. */
    async remove(principal: Principal, edgeId: string): Promise<EdgeResponse> {
      const row = await uow(scopeOf(principal), (m) => softDeleteEdge(m, edgeId));
      if (!row) throw new NotFoundError('Edge not found');
      return toEdgeResponse(row);
    },
  };
}

export type EdgeService = ReturnType<typeof createEdgeService>;
