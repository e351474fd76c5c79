import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { ScopedRead, UnitOfWork } from '../platform/db/unit-of-work';
import { NotFoundError, ValidationFailedError } from '../platform/errors';
import { VERSION_RETENTION } from '../rules/graph';
import type { NodeRow } from './repository';
import { toNodeResponse } from './repository';
import type { NodeResponse } from './schemas';
import type { EntityState, VersionRow } from './versions-repository';
import { nodeRowExists, purgeVersions, readDiffPage, readEntityHistory, readNodeAsOf } from './versions-repository';
import type {
  GraphDiffEntry,
  GraphDiffQuery,
  GraphDiffResponse,
  GraphVersion,
  NodeHistoryQuery,
} from './versions-schemas';

const DAY_MS = 86_400_000;

/** The oldest instant the kept versions reach: `as_of` and the diff may not ask before it. */
export const retentionHorizon = (retentionDays: number, now = Date.now()) => new Date(now - retentionDays * DAY_MS);

/**
 * 422 (HTTPValidationError, naming the horizon) for an instant before the retention horizon: the
 * versions that would rebuild it have been purged.
 */
export function refuseBeforeHorizon(at: string, retentionDays: number, loc: (string | number)[]): void {
  const horizon = retentionHorizon(retentionDays);
  if (Date.parse(at) < horizon.getTime()) {
    throw new ValidationFailedError([
      {
        loc,
        msg:
          `Before the version retention horizon ${horizon.toISOString()}: versions are kept ` +
          `${retentionDays} days (VERSION_RETENTION_DAYS)`,
        type: 'value_error.before_retention_horizon',
      },
    ]);
  }
}

const VERSIONED_FIELDS = {
  node: ['type', 'name', 'properties', 'connection_id', 'base_salience', 'is_deleted'],
  edge: [
    'type',
    'source_node_id',
    'target_node_id',
    'properties',
    'reasoning',
    'evidence',
    'is_deleted',
    'valid_from',
    'valid_to',
  ],
} as const;

const live = (state: EntityState | null) => state !== null && state.is_deleted !== true;
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** added, removed or changed between two states, with the versioned fields that differ; null when neither. */
export function classifyChange(
  kind: 'node' | 'edge',
  before: EntityState | null,
  after: EntityState | null,
): Pick<GraphDiffEntry, 'change' | 'changed_fields'> | null {
  const fields = VERSIONED_FIELDS[kind].filter((field) => field !== 'is_deleted');
  if (!live(before) && live(after)) return { change: 'added', changed_fields: [...fields] };
  if (live(before) && !live(after)) return { change: 'removed', changed_fields: [...fields] };
  if (!live(before) || !live(after)) return null;
  const changed = fields.filter((field) => !same(before?.[field], after?.[field]));
  return changed.length > 0 ? { change: 'changed', changed_fields: changed } : null;
}

const toVersion = (row: VersionRow): GraphVersion => ({
  version_id: row.version_id,
  entity_kind: row.entity_kind,
  entity_id: row.entity_id,
  operation: row.operation,
  label: row.label,
  changed_at: new Date(row.changed_at).toISOString(),
  actor: {
    user_id: row.user_id,
    credential_kind: row.credential_kind,
    credential_id: row.credential_id,
    run_id: row.run_id,
    prompt_id: row.prompt_id,
    capability: row.capability,
    capability_call: row.capability_call,
  },
  before: row.before,
  after: row.after,
});

const badCursor = () =>
  new ValidationFailedError([{ loc: ['query', 'cursor'], msg: 'Not a cursor of this list', type: 'value_error' }]);

function decodeVersionCursor(cursor: string): string {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^v:\d{1,18}$/.test(text)) throw badCursor();
  return text.slice(2);
}

function decodeDiffCursor(cursor: string): { kind: string; id: string } {
  const match = /^(node|edge):([0-9a-f-]{36})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) throw badCursor();
  return { kind: match[1]!, id: match[2]! };
}

const encode = (text: string) => Buffer.from(text).toString('base64url');

/** Reads of the graph's past (issue 31 part 2) and the retention purge (part 5). */
export function createVersionService(deps: { uow: UnitOfWork; read: ScopedRead; retentionDays: number }) {
  const { uow, read, retentionDays } = deps;

  return {
    retentionDays,

    /** The node as it stood at `asOf`; 404 when it did not exist or was deleted then. */
    async nodeAsOf(principal: Principal, nodeId: string, asOf: string): Promise<NodeResponse> {
      refuseBeforeHorizon(asOf, retentionDays, ['query', 'as_of']);
      const state = await readNodeAsOf(read, scopeOf(principal), nodeId, asOf);
      if (!state || state.is_deleted === true) throw new NotFoundError('Node not found at as_of');
      return toNodeResponse(state as unknown as NodeRow);
    },

    /** The node's versions, newest first, cursor-paged; 404 when the workspace has no such node. */
    async history(principal: Principal, nodeId: string, query: NodeHistoryQuery) {
      const scope = scopeOf(principal);
      const beforeVersion = query.cursor ? decodeVersionCursor(query.cursor) : null;
      const rows = await readEntityHistory(read, scope, {
        kind: 'node',
        id: nodeId,
        beforeVersion,
        limit: query.limit,
      });
      if (rows.length === 0 && !beforeVersion && !(await nodeRowExists(read, scope, nodeId))) {
        throw new NotFoundError('Node not found');
      }
      const last = rows.at(-1);
      return {
        node_id: nodeId,
        versions: rows.map(toVersion),
        next_cursor: last && rows.length === query.limit ? encode(`v:${last.version_id}`) : null,
        retention_horizon: retentionHorizon(retentionDays).toISOString(),
      };
    },

    /** What was added, changed and removed between two instants, edges then nodes by id, paged. */
    async diff(principal: Principal, query: GraphDiffQuery): Promise<GraphDiffResponse> {
      refuseBeforeHorizon(query.from, retentionDays, ['query', 'from']);
      const to = query.to ?? new Date().toISOString();
      const after = query.cursor ? decodeDiffCursor(query.cursor) : null;
      const rows = await uow(scopeOf(principal), (m) =>
        readDiffPage(m, { from: query.from, to, after, limit: query.limit }),
      );
      const changes: GraphDiffEntry[] = [];
      for (const row of rows) {
        const change = classifyChange(row.kind, row.before, row.after);
        if (change)
          changes.push({ entity_kind: row.kind, entity_id: row.id, ...change, before: row.before, after: row.after });
      }
      const last = rows.at(-1);
      return {
        from: new Date(query.from).toISOString(),
        to: new Date(to).toISOString(),
        changes,
        next_cursor: last && rows.length === query.limit ? encode(`${last.kind}:${last.id}`) : null,
      };
    },

    /** Deletes versions past retention in every workspace, one short transaction per batch. */
    async purge(batchSize: number = VERSION_RETENTION.purgeBatch, onBatch: () => void = () => {}) {
      let deleted = 0;
      for (;;) {
        const batch = await uow({}, (m) => purgeVersions(m, retentionDays, batchSize));
        deleted += batch;
        onBatch();
        if (batch < batchSize) return { deleted };
      }
    },
  };
}

export type VersionService = ReturnType<typeof createVersionService>;
