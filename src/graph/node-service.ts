import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { ScopedRead, UnitOfWork } from '../platform/db/unit-of-work';
import { BadRequestError, NotFoundError } from '../platform/errors';
import type { OutboxRelay } from '../platform/outbox/relay';
import { readLiveNodeWithEdges } from './node-edges-repository';
import {
  readFirstNodes,
  readLiveNode,
  readNodePage,
  readNodesByName,
  softDeleteIncidentEdges,
  softDeleteNodesOfType,
  toNodeResponse,
} from './repository';
import type { NodeCreateRequest, NodeListQuery, NodePatchRequest, NodeResponse, TypeaheadQuery } from './schemas';
import { createNodeInTransaction, patchNodeInTransaction, removeNodeInTransaction } from './writes';

export interface GraphServiceDeps {
  uow: UnitOfWork;
  read: ScopedRead;
  outbox: Pick<OutboxRelay, 'kick'>;
}

/** Node reads and writes. Every statement runs in the caller's workspace unit of work. */
export function createNodeService(deps: GraphServiceDeps) {
  const { uow, read, outbox } = deps;

  return {
    async create(principal: Principal, body: NodeCreateRequest): Promise<NodeResponse> {
      const row = await uow(scopeOf(principal), (m) => createNodeInTransaction(m, principal.workspaceId, body));
      outbox.kick(principal.workspaceId);
      return toNodeResponse(row);
    },

    /** The hottest read: one statement, one round trip (see createScopedRead). */
    async get(principal: Principal, nodeId: string, includeEmbedding = false): Promise<NodeResponse> {
      const row = await readLiveNode(read, scopeOf(principal), nodeId, includeEmbedding);
      if (!row) throw new NotFoundError('Node not found');
      return toNodeResponse(row);
    },

    /**
     * The node and up to `edgeLimit` live edges each way with the node at the other end, in one
     * statement; `truncated` when there were more one way.
     */
    async getWithEdges(principal: Principal, nodeId: string, edgeLimit: number) {
      const row = await readLiveNodeWithEdges(read, scopeOf(principal), nodeId, edgeLimit);
      if (!row) throw new NotFoundError('Node not found');
      const { outgoing, incoming, ...node } = row;
      return {
        node: toNodeResponse(node),
        edges: { outgoing: outgoing.slice(0, edgeLimit), incoming: incoming.slice(0, edgeLimit) },
        truncated: outgoing.length > edgeLimit || incoming.length > edgeLimit,
      };
    },

    async list(principal: Principal, query: NodeListQuery): Promise<NodeResponse[]> {
      const rows = await readNodePage(read, scopeOf(principal), {
        type: query.type ?? null,
        connectionId: query.connection_id ?? null,
        limit: query.limit,
        offset: query.offset,
      });
      return rows.map(toNodeResponse);
    },

    /** Case-insensitive substring on name: exact matches first, then by importance. Free of charge. */
    async typeahead(principal: Principal, query: TypeaheadQuery): Promise<NodeResponse[]> {
      // One statement, as the other hot reads (see createScopedRead).
      const rows =
        query.q === undefined
          ? await readFirstNodes(read, scopeOf(principal), query.type ?? null, query.limit)
          : await readNodesByName(read, scopeOf(principal), query.q, query.type ?? null, query.limit);
      return rows.map(toNodeResponse);
    },

    async patch(principal: Principal, nodeId: string, body: NodePatchRequest): Promise<NodeResponse> {
      const row = await uow(scopeOf(principal), (m) => patchNodeInTransaction(m, principal.workspaceId, nodeId, body));
      outbox.kick(principal.workspaceId);
      return toNodeResponse(row);
    },

    /** Soft delete of one node and its incident edges; answers with the deleted row. */
    async remove(principal: Principal, nodeId: string): Promise<NodeResponse> {
      return toNodeResponse(await uow(scopeOf(principal), (m) => removeNodeInTransaction(m, nodeId)));
    },

    /** knowledge-graph-service-api.md §3: soft-deletes every live node of the type and their incident edges. */
    async deleteByType(principal: Principal, type: string | undefined) {
      if (type === undefined || type.trim() === '') throw new BadRequestError('Query parameter type is required');
      return uow(scopeOf(principal), async (m) => {
        const nodeIds = await softDeleteNodesOfType(m, type);
        const edgesDeleted = nodeIds.length > 0 ? await softDeleteIncidentEdges(m, nodeIds) : 0;
        return { type, nodes_deleted: nodeIds.length, edges_deleted: edgesDeleted };
      });
    },
  };
}

export type NodeService = ReturnType<typeof createNodeService>;
