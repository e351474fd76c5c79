import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { queryRows } from '../platform/db/query';
import type { ScopedRead, UnitOfWork } from '../platform/db/unit-of-work';
import { BadRequestError, NotFoundError } from '../platform/errors';
import type { OutboxRelay } from '../platform/outbox/relay';
import { enqueueOutboxEvent } from '../platform/outbox/relay';
import { registerType } from '../type-catalog/register';
import { createNodeInTransaction } from './node-writes';
import type {
  NodeCreateRequest,
  NodeListQuery,
  NodePatchRequest,
  NodeResponse,
  NodeRow,
  TypeaheadQuery,
} from './schemas';
import { NODE_COLUMNS, toNodeResponse } from './schemas';

export interface GraphServiceDeps {
  uow: UnitOfWork;
  read: ScopedRead;
  outbox: Pick<OutboxRelay, 'kick'>;
}

/** `%` and `_` in a user's text are literals, not wildcards. */
export const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

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
      const [row] = await read<NodeRow>(
        scopeOf(principal),
        `SELECT ${NODE_COLUMNS}${includeEmbedding ? ', n.embedding::text AS embedding' : ''}
         FROM nodes n WHERE n.id = $1::uuid AND NOT n.is_deleted`,
        [nodeId],
      );
      if (!row) throw new NotFoundError('Node not found');
      return toNodeResponse(row);
    },

    async list(principal: Principal, query: NodeListQuery): Promise<NodeResponse[]> {
      const rows = await read<NodeRow>(
        scopeOf(principal),
        `SELECT ${NODE_COLUMNS} FROM nodes n
         WHERE NOT n.is_deleted AND ($1::text IS NULL OR n.type = $1::text) AND ($2::uuid IS NULL OR n.connection_id = $2::uuid)
         ORDER BY n.created_at, n.id LIMIT $3::int OFFSET $4::int`,
        [query.type ?? null, query.connection_id ?? null, query.limit, query.offset],
      );
      return rows.map(toNodeResponse);
    },

    /** Case-insensitive substring on name: exact matches first, then by importance. Free of charge. */
    async typeahead(principal: Principal, query: TypeaheadQuery): Promise<NodeResponse[]> {
      const rows: NodeRow[] = await uow(scopeOf(principal), (m) =>
        query.q === undefined
          ? m.query(
              `SELECT ${NODE_COLUMNS} FROM nodes n WHERE NOT n.is_deleted AND ($1::text IS NULL OR n.type = $1)
               ORDER BY n.created_at, n.id LIMIT $2`,
              [query.type ?? null, query.limit],
            )
          : m.query(typeaheadSql(NODE_COLUMNS), [
              query.q,
              likePattern(query.q),
              query.type ?? null,
              query.limit,
              usesTrigram(query.q),
            ]),
      );
      return rows.map(toNodeResponse);
    },

    async patch(principal: Principal, nodeId: string, body: NodePatchRequest): Promise<NodeResponse> {
      const row = await uow(scopeOf(principal), async (m) => {
        const [current]: { name: string; type: string }[] = await m.query(
          `SELECT name, type FROM nodes WHERE id = $1 AND NOT is_deleted FOR UPDATE`,
          [nodeId],
        );
        if (!current) throw new NotFoundError('Node not found');
        const properties = body.properties ?? {};
        const removed = Object.keys(properties).filter((key) => properties[key] === null);
        const [updated]: NodeRow[] = await queryRows(
          m,
          `UPDATE nodes n SET name = COALESCE($2, n.name), type = COALESCE($3, n.type),
             properties = (n.properties || $4::jsonb) - $5::text[], updated_at = now()
           WHERE n.id = $1 RETURNING ${NODE_COLUMNS}`,
          [nodeId, body.name ?? null, body.type ?? null, JSON.stringify(properties), removed],
        );
        if (body.type !== undefined && body.type !== current.type) {
          await registerType(m, principal.workspaceId, 'node', body.type);
        }
        await enqueueOutboxEvent(m, {
          workspaceId: principal.workspaceId,
          eventType: 'node.updated',
          aggregateId: nodeId,
          payload: { node_id: nodeId, name_changed: body.name !== undefined && body.name !== current.name },
        });
        return updated!;
      });
      outbox.kick(principal.workspaceId);
      return toNodeResponse(row);
    },

    /** Soft delete of one node and its incident edges; answers with the deleted row. */
    async remove(principal: Principal, nodeId: string): Promise<NodeResponse> {
      const row = await uow(scopeOf(principal), async (m) => {
        const [deleted]: NodeRow[] = await queryRows(
          m,
          `UPDATE nodes n SET is_deleted = true, deleted_at = now(), updated_at = now()
           WHERE n.id = $1 AND NOT n.is_deleted RETURNING ${NODE_COLUMNS}`,
          [nodeId],
        );
        if (!deleted) throw new NotFoundError('Node not found');
        await queryRows(
          m,
          `UPDATE edges SET is_deleted = true, deleted_at = now()
           WHERE NOT is_deleted AND (source_node_id = $1 OR target_node_id = $1)`,
          [nodeId],
        );
        return deleted;
      });
      return toNodeResponse(row);
    },

    /** Contract 3: soft-deletes every live node of the type and their incident edges. */
    async deleteByType(principal: Principal, type: string | undefined) {
      if (type === undefined || type.trim() === '') throw new BadRequestError('Query parameter type is required');
      return uow(scopeOf(principal), async (m) => {
        const nodes: { id: string }[] = await queryRows(
          m,
          `UPDATE nodes SET is_deleted = true, deleted_at = now(), updated_at = now()
           WHERE type = $1 AND NOT is_deleted RETURNING id`,
          [type],
        );
        let edgesDeleted = 0;
        if (nodes.length > 0) {
          const [result]: { count: number }[] = await m.query(
            `WITH d AS (
               UPDATE edges SET is_deleted = true, deleted_at = now()
               WHERE NOT is_deleted AND (source_node_id = ANY($1::uuid[]) OR target_node_id = ANY($1::uuid[]))
               RETURNING 1)
             SELECT count(*)::int AS count FROM d`,
            [nodes.map((node) => node.id)],
          );
          edgesDeleted = result!.count;
        }
        return { type, nodes_deleted: nodes.length, edges_deleted: edgesDeleted };
      });
    },
  };
}

export type NodeService = ReturnType<typeof createNodeService>;

/**
 * Exact (case-insensitive) matches first, then substring matches by importance. The matching
 * runs in `weft_name_matches` (see its migration: under row-level security neither lower() nor
 * ILIKE may use an index); the rows are read back under the caller's own policy.
 * $1 q, $2 LIKE pattern, $3 type or NULL, $4 limit, $5 use the trigram index.
 */
export const typeaheadSql = (columns: string) => `
SELECT ${columns}, m.match_rank FROM weft_name_matches($1, $2, $3, $4, $5) m JOIN nodes n ON n.id = m.id
WHERE NOT n.is_deleted ORDER BY m.match_rank, n.importance_score DESC, n.id LIMIT $4`;

/** Trigrams need three characters; below that an index walk by importance is the better plan. */
export const usesTrigram = (q: string) => q.length >= 3;
