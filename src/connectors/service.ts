import { createHash, randomUUID } from 'node:crypto';
import type { AnyCapability, WorkspaceToolSource } from '../capabilities/define';
import { toWireName } from '../capabilities/wire-names';
import type { CreditService } from '../credits/service';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { Sealer } from '../platform/crypto/sealer';
import type { ScopedRead, UnitOfWork } from '../platform/db/unit-of-work';
import { ConflictError, NotFoundError, ValidationFailedError } from '../platform/errors';
import { LIMITS } from '../rules/limits';
import { createCallLedger } from './call-ledger';
import { firstServer, operationsOf } from './openapi';
import type { Outbound } from './outbound';
import { ConnectorCallError } from './outbound';
import { listMcpTools } from './remote-mcp';
import type { ConnectorRow } from './repository';
import * as repo from './repository';
import type {
  AuthView,
  ConnectorAuth,
  ConnectorVersionView,
  ConnectorView,
  CreateConnectorRequest,
  UpdateConnectorRequest,
} from './schemas';
import type { RemoteTool, StoredTool } from './tool-names';
import { registerTools } from './tool-names';
import { connectorCapabilities, createAuthHeaders, createRemoteCall, inputSchemaOf, sealBinding } from './tools';

const limits = LIMITS.connectors;
/** Names no connector may take besides the registry's areas: Weft's own words. */
const RESERVED = [
  'agent',
  'approvals',
  'billing',
  'capabilities',
  'connectors',
  'graph',
  'mcp',
  'ontology',
  'run',
  'runs',
  'weft',
];

const iso = (value: Date | string) => new Date(value).toISOString();
/** Built tool lists and kept versions' lists held per process, each map cleared when it reaches this. */
const CACHED_VERSIONS = 1000;

/** 422 located at the request's field, with the reason (nothing was stored). */
const refused = (field: string, msg: string, type = 'connector_refused') =>
  new ValidationFailedError([{ loc: ['body', field], msg, type }]);

/** What may be shown of a secret: the first 12 hex digits of its SHA-256 and its last 4 characters. */
function hintOf(auth: ConnectorAuth): { type: AuthView['type']; hint: Omit<AuthView, 'type'> } {
  const secret =
    auth.type === 'bearer'
      ? auth.token
      : auth.type === 'header'
        ? auth.value
        : auth.type === 'oauth_client_credentials'
          ? auth.client_secret
          : null;
  const shown = {
    fingerprint: secret === null ? null : createHash('sha256').update(secret).digest('hex').slice(0, 12),
    last4: secret === null ? null : secret.slice(-4),
    ...(auth.type === 'header' ? { header_name: auth.name } : {}),
    ...(auth.type === 'oauth_client_credentials'
      ? { token_url: auth.token_url, client_id: auth.client_id, ...(auth.scope ? { scope: auth.scope } : {}) }
      : {}),
  };
  return { type: auth.type, hint: shown };
}

export function viewOf(row: ConnectorRow): ConnectorView {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    url: row.url,
    auth: { type: row.auth_type, ...row.auth_hint },
    timeout_seconds: row.timeout_seconds,
    max_response_bytes: row.max_response_bytes,
    credits_per_call: row.credits_per_call,
    version: row.version,
    tools: row.tools.map((tool) => ({
      name: `${row.name}.${tool.name}`,
      remote_name: tool.remote_name,
      description: tool.description,
      read_only: tool.read_only,
      input_schema: tool.input_schema,
    })),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    refreshed_at: iso(row.refreshed_at),
  };
}

/**
 * Connectors (issue 41): a workspace's remote MCP servers and OpenAPI-described HTTP APIs. Create,
 * refresh and a rotation discover the remote tools first, outside any transaction, and store
 * nothing when that fails (422 with the reason). `toolsOf` is the capability layer's source of
 * the workspace's own tools: read on each lookup, built once per connector version.
 */
export function createConnectorService(deps: {
  uow: UnitOfWork;
  read: ScopedRead;
  sealer: Sealer;
  outbound: Outbound;
  credits: Pick<CreditService, 'chargeFor'>;
  /** The registry's tool names (built on first use): their areas are reserved, their wire names taken. */
  registryNames: () => readonly string[];
}) {
  const { uow, read, sealer, outbound } = deps;
  const remote = createRemoteCall(deps);
  const ledger = createCallLedger(uow);
  const authHeaders = createAuthHeaders(deps);
  let registry: { areas: Set<string>; wires: Set<string> } | undefined;
  const registryOf = () => {
    const names = deps.registryNames();
    registry ??= {
      areas: new Set([...RESERVED, ...names.map((name) => name.split('.')[0]!)]),
      wires: new Set(names.map(toWireName)),
    };
    return registry;
  };
  // Built capabilities by `<connector id>@<version>` and a stamp of the row: a rotation or refresh makes new ones.
  const built = new Map<string, { stamp: string; tools: readonly AnyCapability[] }>();

  /** The remote tools as registered for `row`, or 422 with why they cannot be. */
  async function discover(
    row: Pick<ConnectorRow, 'id' | 'workspace_id' | 'name' | 'kind' | 'url' | 'auth_type' | 'auth_sealed'>,
    openapi: Record<string, unknown> | null,
  ): Promise<StoredTool[]> {
    let remoteTools: RemoteTool[];
    if (row.kind === 'http') {
      const operations = operationsOf(openapi ?? {});
      if ('problems' in operations) throw refused('openapi', operations.problems.join('; '), 'openapi_invalid');
      remoteTools = operations.tools;
      if (remoteTools.length > limits.toolsPerConnector) {
        throw refused('openapi', `more than ${limits.toolsPerConnector} operations`, 'openapi_invalid');
      }
    } else {
      const full = { ...row, auth_hint: {} } as ConnectorRow;
      try {
        remoteTools = await outbound.within(
          limits.discoveryTimeoutMs,
          { maxResponseBytes: 4 * 1024 * 1024 },
          async (call) => listMcpTools(row.url, await authHeaders(full, call), call, limits.toolsPerConnector),
        );
      } catch (error) {
        if (!(error instanceof ConnectorCallError)) throw error;
        const detail = error.detail as { error: string; message: string };
        throw refused('url', `The MCP server could not be listed (${detail.error}): ${detail.message}`, detail.error);
      }
    }
    const registered = registerTools(row.name, remoteTools, registryOf().wires);
    if ('problems' in registered) throw refused('tools', registered.problems.join('; '), 'tools_unregistrable');
    for (const tool of registered.tools) {
      try {
        inputSchemaOf(tool.input_schema);
      } catch {
        throw refused('tools', `tool '${tool.remote_name}': its input schema does not compile`, 'tools_unregistrable');
      }
    }
    return registered.tools;
  }

  const mustFind = async (principal: Principal, id: string, lock = false) =>
    uow(scopeOf(principal), async (m) => {
      const row = await repo.findConnector(m, id, lock);
      if (!row) throw new NotFoundError('No such connector in this workspace');
      return row;
    });

  async function save(principal: Principal, id: string, body: UpdateConnectorRequest, refresh: boolean) {
    const current = await mustFind(principal, id);
    const auth = body.auth ? hintOf(body.auth) : { type: current.auth_type, hint: current.auth_hint };
    const sealed = body.auth
      ? body.auth.type === 'none'
        ? null
        : sealer.seal(JSON.stringify(body.auth), sealBinding(current)).sealed
      : current.auth_sealed;
    const rediscover = refresh || body.auth !== undefined;
    const tools = rediscover
      ? await discover({ ...current, auth_type: auth.type, auth_sealed: sealed }, current.openapi)
      : current.tools;
    return uow(scopeOf(principal), async (m) => {
      if (!(await repo.findConnector(m, id, true))) throw new NotFoundError('No such connector in this workspace');
      const row = await repo.updateConnector(m, id, {
        auth_type: auth.type,
        auth_sealed: sealed,
        auth_hint: auth.hint,
        timeout_seconds: body.timeout_seconds ?? current.timeout_seconds,
        max_response_bytes: body.max_response_bytes ?? current.max_response_bytes,
        credits_per_call: body.credits_per_call ?? current.credits_per_call,
        tools,
        bump: JSON.stringify(tools) !== JSON.stringify(current.tools),
        refreshed: rediscover,
      });
      // A changed list is kept as the new version; a run keeps the one it started with.
      await repo.insertVersion(m, { workspace_id: row!.workspace_id, connector_id: id, version: row!.version, tools });
      return viewOf(row!);
    });
  }

  // A kept version's tool list never changes: read once per process (bounded).
  const versionTools = new Map<string, StoredTool[]>();
  const toolsOfVersion = async (row: ConnectorRow, version: number) => {
    const key = `${row.id}@${version}`;
    const cached = versionTools.get(key);
    if (cached) return cached;
    const tools = await repo.readVersionTools(read, row.workspace_id, row.id, version);
    if (!tools) return null;
    if (versionTools.size >= CACHED_VERSIONS) versionTools.clear();
    versionTools.set(key, tools);
    return tools;
  };
  /** The connector's tools as `version` had them (the current one, or an older one a run keeps). */
  const capabilitiesOf = async (row: ConnectorRow, version: number): Promise<readonly AnyCapability[]> => {
    const key = `${row.id}@${version}`;
    const stamp = `${row.version}:${iso(row.updated_at)}`;
    const cached = built.get(key);
    if (cached?.stamp === stamp) return cached.tools;
    const calls = { remote, credits: deps.credits, ledger };
    let tools: AnyCapability[];
    if (version === row.version) tools = connectorCapabilities(row, calls);
    else {
      const kept = await toolsOfVersion(row, version);
      // Pruned only once no unfinished run keeps it; should one be missing, its tools are unknown.
      if (!kept) return [];
      tools = connectorCapabilities({ ...row, tools: kept }, calls, { version, current: row.tools });
    }
    if (built.size >= CACHED_VERSIONS) built.clear();
    built.set(key, { stamp, tools });
    return tools;
  };

  const source: WorkspaceToolSource = {
    // A run that waited on a connector's tool meets this once the connector is gone.
    unknown: (name) =>
      new NotFoundError({
        error: 'connector_removed',
        message: `No connector of this workspace has the tool ${name} (removed, or never registered)`,
      }),
    async toolsOf(workspaceId, pins) {
      const rows = await repo.readConnectors(read, workspaceId);
      // A run sees the connectors it started with, each at the version it had then.
      const kept = pins ? rows.filter((row) => pins[row.id] !== undefined) : rows;
      const lists = await Promise.all(kept.map((row) => capabilitiesOf(row, pins?.[row.id] ?? row.version)));
      return lists.flat();
    },
  };

  return {
    ...source,

    async create(principal: Principal, body: CreateConnectorRequest): Promise<ConnectorView> {
      if (registryOf().areas.has(body.name)) {
        throw new ConflictError({ error: 'name_reserved', message: `'${body.name}' is a built-in area` });
      }
      const url = body.kind === 'mcp' ? body.url : (body.base_url ?? firstServer(body.openapi ?? {}));
      if (body.kind === 'mcp' && !url) throw refused('url', 'An MCP connector needs its server’s url');
      if (body.kind === 'http' && !body.openapi)
        throw refused('openapi', 'An http connector needs its OpenAPI document');
      if (!url) throw refused('base_url', 'The document names no absolute server URL: give base_url');
      if (body.kind === 'http' && Buffer.byteLength(JSON.stringify(body.openapi)) > limits.openapiBytes) {
        throw refused('openapi', 'The document is larger than 1 MiB', 'openapi_invalid');
      }
      const id = randomUUID();
      const row = { id, workspace_id: principal.workspaceId, name: body.name, kind: body.kind, url };
      const auth = hintOf(body.auth);
      const sealed = body.auth.type === 'none' ? null : sealer.seal(JSON.stringify(body.auth), sealBinding(row)).sealed;
      const openapi = body.kind === 'http' ? (body.openapi ?? null) : null;
      const tools = await discover({ ...row, auth_type: auth.type, auth_sealed: sealed }, openapi);
      return uow(scopeOf(principal), async (m) => {
        if ((await repo.countConnectors(m)) >= limits.perWorkspace) {
          throw new ConflictError({ error: 'too_many_connectors', message: `At most ${limits.perWorkspace}` });
        }
        const inserted = await repo.insertConnector(m, {
          ...row,
          openapi,
          auth_type: auth.type,
          auth_sealed: sealed,
          auth_hint: auth.hint,
          timeout_seconds: body.timeout_seconds,
          max_response_bytes: body.max_response_bytes,
          credits_per_call: body.credits_per_call,
          tools,
          created_by: principal.userId,
        });
        if (!inserted) throw new ConflictError({ error: 'name_taken', message: `A connector is named '${body.name}'` });
        await repo.insertVersion(m, { workspace_id: row.workspace_id, connector_id: id, version: 1, tools });
        return viewOf(inserted);
      });
    },

    list: (principal: Principal) =>
      uow(scopeOf(principal), async (m) => ({
        connectors: (await repo.listConnectors(m)).map((row) => {
          const { tools, ...view } = viewOf(row);
          return { ...view, tool_count: tools.length };
        }),
      })),

    get: async (principal: Principal, id: string) => viewOf(await mustFind(principal, id)),

    /** One kept version of the connector's tools: 404 for another workspace's connector or a pruned version. */
    getVersion: (principal: Principal, id: string, version: number): Promise<ConnectorVersionView> =>
      uow(scopeOf(principal), async (m) => {
        const row = await repo.findConnector(m, id);
        const kept = row && (await repo.findVersion(m, id, version));
        if (!row || !kept) {
          throw new NotFoundError({
            error: 'version_not_found',
            message: `No version ${version} of this connector is kept (kept while a run started with it is unfinished)`,
          });
        }
        const { tools } = viewOf({ ...row, tools: kept.tools });
        return {
          connector_id: row.id,
          name: row.name,
          version: kept.version,
          current: kept.version === row.version,
          created_at: iso(kept.created_at),
          tools,
        };
      }),

    update: (principal: Principal, id: string, body: UpdateConnectorRequest) => save(principal, id, body, false),

    refresh: (principal: Principal, id: string) => save(principal, id, {}, true),

    async remove(principal: Principal, id: string): Promise<void> {
      await uow(scopeOf(principal), async (m) => {
        if ((await repo.deleteConnector(m, id)) === 0) throw new NotFoundError('No such connector in this workspace');
      });
      for (const key of built.keys()) {
        if (key.startsWith(`${id}@`)) built.delete(key);
      }
    },
  };
}

export type ConnectorService = ReturnType<typeof createConnectorService>;
