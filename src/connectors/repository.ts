import type { EntityManager } from 'typeorm';
import { affectedRows, queryFirst, queryRows } from '../platform/db/query';
import type { ScopedRead } from '../platform/db/unit-of-work';
import type { AuthView } from './schemas';
import type { StoredTool } from './tool-names';

/** A connector's row; `auth_sealed` is the sealed `auth` object (never answered). */
export interface ConnectorRow {
  id: string;
  workspace_id: string;
  name: string;
  kind: 'mcp' | 'http';
  url: string;
  auth_type: AuthView['type'];
  auth_sealed: string | null;
  auth_hint: Omit<AuthView, 'type'>;
  timeout_seconds: number;
  max_response_bytes: number;
  credits_per_call: number;
  tools: StoredTool[];
  version: number;
  created_at: Date | string;
  updated_at: Date | string;
  refreshed_at: Date | string;
}

const COLUMNS = `id, workspace_id, name, kind, url, auth_type, auth_sealed, auth_hint, timeout_seconds,
  max_response_bytes, credits_per_call, tools, version, created_at, updated_at, refreshed_at`;

export type NewConnector = Omit<ConnectorRow, 'version' | 'created_at' | 'updated_at' | 'refreshed_at'> & {
  openapi: Record<string, unknown> | null;
  created_by: string;
};

/** Null when the name is taken in the workspace (the unique constraint, without an error). */
export const insertConnector = (m: EntityManager, row: NewConnector) =>
  queryFirst<ConnectorRow>(
    m,
    `INSERT INTO connectors (id, workspace_id, name, kind, url, openapi, auth_type, auth_sealed, auth_hint,
       timeout_seconds, max_response_bytes, credits_per_call, tools, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
     ON CONFLICT (workspace_id, name) DO NOTHING RETURNING ${COLUMNS}`,
    [
      row.id,
      row.workspace_id,
      row.name,
      row.kind,
      row.url,
      row.openapi === null ? null : JSON.stringify(row.openapi),
      row.auth_type,
      row.auth_sealed,
      JSON.stringify(row.auth_hint),
      row.timeout_seconds,
      row.max_response_bytes,
      row.credits_per_call,
      JSON.stringify(row.tools),
      row.created_by,
    ],
  );

export const findConnector = (m: EntityManager, id: string, lock = false) =>
  queryFirst<ConnectorRow & { openapi: Record<string, unknown> | null }>(
    m,
    `SELECT ${COLUMNS}, openapi FROM connectors WHERE id = $1${lock ? ' FOR UPDATE' : ''}`,
    [id],
  );

export const listConnectors = (m: EntityManager) =>
  queryRows<ConnectorRow>(m, `SELECT ${COLUMNS} FROM connectors ORDER BY name`);

export const countConnectors = async (m: EntityManager) =>
  Number((await queryFirst<{ n: string }>(m, 'SELECT count(*) AS n FROM connectors'))?.n ?? 0);

/** The workspace's connectors in one scoped statement (the capability layer's lookup, on every call). */
export const readConnectors = (read: ScopedRead, workspaceId: string) =>
  read<ConnectorRow>({ workspaceId }, `SELECT ${COLUMNS} FROM connectors ORDER BY name`);

export interface ConnectorUpdate {
  auth_type: AuthView['type'];
  auth_sealed: string | null;
  auth_hint: Omit<AuthView, 'type'>;
  timeout_seconds: number;
  max_response_bytes: number;
  credits_per_call: number;
  tools: StoredTool[];
  /** The tools changed: a new version (a run keeps what it started with). */
  bump: boolean;
  refreshed: boolean;
}

export const updateConnector = (m: EntityManager, id: string, update: ConnectorUpdate) =>
  queryFirst<ConnectorRow>(
    m,
    `UPDATE connectors SET auth_type = $2, auth_sealed = $3, auth_hint = $4, timeout_seconds = $5,
       max_response_bytes = $6, credits_per_call = $7, tools = $8,
       version = version + CASE WHEN $9 THEN 1 ELSE 0 END, updated_at = now(),
       refreshed_at = CASE WHEN $10 THEN now() ELSE refreshed_at END
     WHERE id = $1 RETURNING ${COLUMNS}`,
    [
      id,
      update.auth_type,
      update.auth_sealed,
      JSON.stringify(update.auth_hint),
      update.timeout_seconds,
      update.max_response_bytes,
      update.credits_per_call,
      JSON.stringify(update.tools),
      update.bump,
      update.refreshed,
    ],
  );

export const deleteConnector = (m: EntityManager, id: string) =>
  affectedRows(m, 'DELETE FROM connectors WHERE id = $1', [id]);

/** One kept version of a connector's tool list (the current one included). */
export interface ConnectorVersionRow {
  connector_id: string;
  version: number;
  tools: StoredTool[];
  created_at: Date | string;
}

/** Keeps `tools` as the connector's `version` (at create, and at each change of the list). */
export const insertVersion = (
  m: EntityManager,
  row: { workspace_id: string; connector_id: string; version: number; tools: StoredTool[] },
) =>
  m.query(
    `INSERT INTO connector_versions (workspace_id, connector_id, version, tools) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING`,
    [row.workspace_id, row.connector_id, row.version, JSON.stringify(row.tools)],
  );

export const findVersion = (m: EntityManager, connectorId: string, version: number) =>
  queryFirst<ConnectorVersionRow>(
    m,
    'SELECT connector_id, version, tools, created_at FROM connector_versions WHERE connector_id = $1 AND version = $2',
    [connectorId, version],
  );

/** The versions kept of a connector, newest first. */
export const listVersions = async (m: EntityManager, connectorId: string) =>
  (
    await queryRows<{ version: number }>(
      m,
      'SELECT version FROM connector_versions WHERE connector_id = $1 ORDER BY version DESC',
      [connectorId],
    )
  ).map((row) => row.version);

/** A kept version's tools in one scoped statement (a pinned run's lookup); null once pruned. */
export const readVersionTools = async (read: ScopedRead, workspaceId: string, connectorId: string, version: number) =>
  (
    await read<{ tools: StoredTool[] }>(
      { workspaceId },
      'SELECT tools FROM connector_versions WHERE connector_id = $1::uuid AND version = $2::int',
      [connectorId, version],
    )
  )[0]?.tools ?? null;

/** Deletes up to `batchSize` old versions no unfinished run pinned, in every workspace (a definer function). */
export const pruneVersions = async (m: EntityManager, batchSize: number) =>
  (await queryFirst<{ n: number }>(m, 'SELECT weft_prune_connector_versions($1) AS n', [batchSize]))?.n ?? 0;

/** Deletes up to `batchSize` ledger rows past the replay window, in every workspace (a definer function). */
export const purgeCalls = async (m: EntityManager, batchSize: number) =>
  (await queryFirst<{ n: number }>(m, 'SELECT weft_purge_connector_calls($1) AS n', [batchSize]))?.n ?? 0;
