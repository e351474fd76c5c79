import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { z } from 'zod';
import type { AnyCapability, CapabilityCall } from '../capabilities/define';
import type { CreditService } from '../credits/service';
import type { Sealer } from '../platform/crypto/sealer';
import { NotFoundError } from '../platform/errors';
import type { CallLedger } from './call-ledger';
import { callOperation } from './openapi';
import type { CallFetch, Outbound } from './outbound';
import { ConnectorCallError, mayRetry } from './outbound';
import { callMcpTool } from './remote-mcp';
import type { ConnectorRow } from './repository';
import type { ConnectorAuth } from './schemas';
import { observedCall } from './telemetry';
import type { StoredTool } from './tool-names';

const validator = new AjvJsonSchemaValidator();
const Output = z.record(z.string(), z.unknown());
const OUTPUT_SCHEMA = { type: 'object', additionalProperties: true };

/** A tool's input check from its remote JSON Schema; throws when the schema does not compile. */
export function inputSchemaOf(schema: Record<string, unknown>) {
  const check = validator.getValidator(schema as never);
  return z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
    const checked = check(value);
    if (!checked.valid) ctx.addIssue({ code: 'custom', message: checked.errorMessage });
  });
}

/** An HTTP tool's method and path (an MCP tool has neither): the same operation in two versions. */
const sameOperation = (a: StoredTool, b: StoredTool) =>
  a.http?.method === b.http?.method && a.http?.path === b.http?.path;

/** The sealed `auth` of a connector opens only under its own workspace and id. */
export const sealBinding = (row: Pick<ConnectorRow, 'workspace_id' | 'id'>) => ({
  workspaceId: row.workspace_id,
  correlationId: row.id,
});

export interface ConnectorCalls {
  sealer: Sealer;
  outbound: Outbound;
  credits: Pick<CreditService, 'chargeFor'>;
}

/**
 * The request headers a connector's auth makes; an OAuth client-credentials token is fetched
 * through the same guarded way out and kept until shortly before it expires.
 */
export function createAuthHeaders(deps: Pick<ConnectorCalls, 'sealer'>) {
  const tokens = new Map<string, { token: string; until: number; sealed: string }>();
  return async (row: ConnectorRow, call: CallFetch): Promise<Record<string, string>> => {
    if (!row.auth_sealed || row.auth_type === 'none') return {};
    const auth = JSON.parse(deps.sealer.open({ sealed: row.auth_sealed }, sealBinding(row))) as ConnectorAuth;
    if (auth.type === 'bearer') return { authorization: `Bearer ${auth.token}` };
    if (auth.type === 'header') return { [auth.name.toLowerCase()]: auth.value };
    if (auth.type !== 'oauth_client_credentials') return {};
    const cached = tokens.get(row.id);
    if (cached && cached.sealed === row.auth_sealed && cached.until > Date.now()) {
      return { authorization: `Bearer ${cached.token}` };
    }
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      ...(auth.scope ? { scope: auth.scope } : {}),
    });
    const basic = Buffer.from(`${encodeURIComponent(auth.client_id)}:${encodeURIComponent(auth.client_secret)}`);
    const response = await call.fetch(auth.token_url, {
      method: 'POST',
      headers: {
        authorization: `Basic ${basic.toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: form.toString(),
    });
    const body = (await response.json().catch(() => ({}))) as { access_token?: unknown; expires_in?: unknown };
    if (!response.ok || typeof body.access_token !== 'string') {
      throw new ConnectorCallError('remote_error', 'The token endpoint gave no access token', response.status);
    }
    const seconds = typeof body.expires_in === 'number' ? body.expires_in : 300;
    tokens.set(row.id, {
      token: body.access_token,
      until: Date.now() + (seconds - 30) * 1000,
      sealed: row.auth_sealed,
    });
    return { authorization: `Bearer ${body.access_token}` };
  };
}

/** Attempts of one call: the first and at most this many more (each with its own timeout). */
const RETRIES = 2;
const RETRY_PAUSE_MS = [200, 1000];

/**
 * One remote call of a connector's tool, within its timeout and response cap; tried again (twice at
 * most) only where `mayRetry` says nothing could have been applied twice.
 */
export function createRemoteCall(deps: ConnectorCalls) {
  const headersOf = createAuthHeaders(deps);
  const once = (row: ConnectorRow, tool: StoredTool, input: Record<string, unknown>, idempotencyKey: string) =>
    deps.outbound.within(
      row.timeout_seconds * 1000,
      { maxResponseBytes: row.max_response_bytes },
      async (call): Promise<Record<string, unknown>> => {
        const headers = await headersOf(row, call);
        if (row.kind === 'http' && tool.http) {
          return callOperation(row.url, headers, call, tool.http, input, idempotencyKey);
        }
        return callMcpTool(row.url, headers, call, {
          remoteName: tool.remote_name,
          input,
          idempotencyKey,
          timeoutMs: row.timeout_seconds * 1000,
        });
      },
    );
  return (row: ConnectorRow, tool: StoredTool, input: Record<string, unknown>, idempotencyKey: string) =>
    observedCall(row.name, `${row.name}.${tool.name}`, async () => {
      for (let attempt = 0; ; attempt += 1) {
        try {
          return await once(row, tool, input, idempotencyKey);
        } catch (error) {
          if (attempt >= RETRIES || !mayRetry(error, tool.read_only)) throw error;
          await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS[attempt]));
        }
      }
    });
}

export type RemoteCall = ReturnType<typeof createRemoteCall>;

/**
 * A connector's tools as capabilities `<connector>.<tool>`. A read-only tool is a read capability
 * priced by the layer (`connector.call` × credits_per_call); any other is a durable write: it runs
 * outside the layer's transactions (a network call never holds one), charges and refunds itself,
 * is sent at most once per idempotency key (call-ledger.ts), and its answer is stored under the key
 * it also sends to the remote end.
 */
export function connectorCapabilities(
  row: ConnectorRow,
  deps: { remote: RemoteCall; credits: Pick<CreditService, 'chargeFor'>; ledger: CallLedger },
  /** A run's older version: `row.tools` is that version's list, `current` the connector's list now. */
  pinned?: { version: number; current: readonly StoredTool[] },
): AnyCapability[] {
  const price = { kind: 'connector.call' as const, quantity: row.credits_per_call };
  return row.tools.map((tool): AnyCapability => {
    // The pinned tool is called only while the remote end still has it under its remote name, never
    // another tool that now bears its Weft name.
    const gone =
      pinned &&
      !pinned.current.some(
        (now) => now.name === tool.name && now.remote_name === tool.remote_name && sameOperation(now, tool),
      );
    const base = {
      name: `${row.name}.${tool.name}`,
      description: tool.description || tool.remote_name,
      input: inputSchemaOf(tool.input_schema),
      output: Output,
      example: {},
      price,
      jsonSchemas: { input: tool.input_schema, output: OUTPUT_SCHEMA },
      openWorld: true as const,
      errors: { 502: 'The remote tool failed: `{error, message, status?}` (its charge refunded)' },
    };
    const remote = async (call: CapabilityCall, input: Record<string, unknown>) => {
      if (gone) {
        throw new NotFoundError({
          error: 'tool_version_gone',
          message:
            `${base.name} (version ${pinned.version} of ${row.name}, which this run keeps) is no longer a tool ` +
            `of the remote end as of version ${row.version}: it is not called`,
        });
      }
      return deps.remote(row, tool, input, call.idempotencyKey);
    };
    if (tool.read_only) return { ...base, access: 'read', handler: (call, input) => remote(call, input) };
    const target = { connectorId: row.id, tool: base.name };
    return {
      ...base,
      access: 'write',
      durable: true,
      approvalByDefault: true,
      handler: (call, input) =>
        deps.credits.chargeFor(
          call.principal,
          price.kind,
          async ({ receipt }) => ({
            result: await deps.ledger.once(call, target, () => remote(call, input)),
            credits_charged: receipt.amount,
          }),
          {
            quantity: price.quantity,
            idempotencyKey: `connector:${call.idempotencyKey}`,
            chargeAgainAfterRefund: true,
          },
        ),
    };
  });
}
