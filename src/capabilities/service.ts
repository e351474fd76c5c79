import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { z } from 'zod';
import type { CreditReceipt } from '../credits/repository';
import { reserveCredits } from '../credits/repository';
import type { CreditService } from '../credits/service';
import { answerCheck } from '../platform/api/answer-check';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { ScopeName } from '../platform/auth/scopes';
import type { ScopedRead, UnitOfWork } from '../platform/db/unit-of-work';
import { ConflictError, ForbiddenError, NotFoundError, ValidationFailedError } from '../platform/errors';
import type { Logger } from '../platform/logger';
import type { CreditKind } from '../rules/costs';
import { CAPABILITY_CREDIT_KINDS, creditCost } from '../rules/costs';
import type {
  AnyCapability,
  CapabilityCall,
  DurableWriteCapability,
  ReadCall,
  ReadCapability,
  ToolPins,
  WorkspaceToolSource,
  WriteCapability,
} from './define';
import { IdempotencyKey, keyReusedError, parseIdempotencyKey, requestHash } from './idempotency';
import type { StoredKey } from './repository';
import { deleteKey, findKey, findKeyOutsideTransaction, storeKey, tryLockKey } from './repository';
import type { CapabilityDescription, Envelope } from './schemas';

export interface InvokeOptions {
  /** The caller's Idempotency-Key; validated here (422), generated when absent. */
  idempotencyKey?: string;
  correlationId?: string;
  /**
   * Keys a paid read tool's charge (a run's step: `<execution_id>:<step_no>`), so a retried call
   * finds the earlier charge and pays nothing more; after a refund it is charged once again.
   * Without it each read call is charged afresh (a write tool's charge rides its idempotency key).
   */
  chargeKey?: string;
  /** The correlation id is derived from the caller's own step: a retry of it takes over its earlier claim. */
  reclaimCorrelation?: boolean;
  /** The run whose step calls the tool: the graph's version rows of its writes name it (issue 31). */
  runId?: string;
  /** The run's pinned versions of the workspace's connectors: the tool is looked up as it was then. */
  pins?: ToolPins;
}

export interface InvokeOutcome {
  envelope: Envelope;
  /** True when a write tool's stored envelope answered and nothing ran. */
  replayed: boolean;
}

export const scopeFor = (capability: AnyCapability): ScopeName =>
  capability.access === 'read' ? 'capabilities:read' : 'capabilities:write';

/** Every scope a call of the tool needs: its access scope, and its REST route's (`scopes`). */
export const scopesFor = (capability: AnyCapability): ScopeName[] => [
  scopeFor(capability),
  ...(capability.scopes ?? []),
];

export const creditKindOf = (capability: Pick<AnyCapability, 'name' | 'price'>): CreditKind | null =>
  capability.price?.kind ?? CAPABILITY_CREDIT_KINDS[capability.name] ?? null;

/** What one call of the tool costs. */
export const costOf = (capability: Pick<AnyCapability, 'name' | 'price'>): number => {
  const kind = creditKindOf(capability);
  return kind ? creditCost(kind, capability.price?.quantity ?? 1) : 0;
};

/** Name, tag, cost and JSON Schemas of a tool, as GET /v1/cap and the MCP tool list tell them. */
export function describeCapability(tool: AnyCapability): CapabilityDescription {
  return {
    name: tool.name,
    tag: `capabilities:${tool.access}`,
    description: tool.description,
    cost: costOf(tool),
    credit_kind: creditKindOf(tool),
    idempotent: tool.access === 'write',
    input_schema: tool.jsonSchemas?.input ?? z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }),
    output_schema: tool.jsonSchemas?.output ?? z.toJSONSchema(tool.output, { io: 'output', unrepresentable: 'any' }),
  };
}

/** `loc` of a 422 for this door: the body over HTTP, the step input in a run. */
function parseInput(capability: AnyCapability, raw: unknown): unknown {
  const parsed = (capability.input as z.ZodType).safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  throw new ValidationFailedError(
    parsed.error.issues.map((issue) => ({
      loc: ['body', ...issue.path.map((segment) => (typeof segment === 'symbol' ? String(segment) : segment))],
      msg: issue.message,
      type: issue.code,
    })),
  );
}

function parseKey(supplied: string | undefined): string {
  if (supplied === undefined) return randomUUID();
  return parseIdempotencyKey(IdempotencyKey, supplied, ['header', 'Idempotency-Key']);
}

/** A stored envelope answers a repeat of its own tool and body; another is 409 `idempotency_key_reused`. */
function replayStored(capability: AnyCapability, stored: StoredKey, hash: string): InvokeOutcome {
  if (stored.tool !== capability.name || stored.request_hash !== hash) throw keyReusedError();
  return { envelope: stored.envelope as Envelope, replayed: true };
}

/**
 * The capability layer: one registry, one way to call a tool whichever door the call comes through
 * (`POST /v1/cap/<tool>`, a run's step, the MCP server). It checks the scope, validates the input,
 * charges before any work (402), refunds on failure, and makes write tools idempotent by key.
 * A read tool is charged through `credits.chargeFor` (pending until it succeeds, refunded when it
 * fails, and by the credits-reconcile pass when the process dies in between); a write tool's
 * charge is part of its transaction, so a rollback takes it back with everything else.
 */
export function createCapabilityService(deps: {
  uow: UnitOfWork;
  read: ScopedRead;
  logger: Logger;
  credits: Pick<CreditService, 'chargeFor'>;
  tools: readonly AnyCapability[];
  /** The workspace's own tools (its connectors'), consulted for a name the registry does not hold. */
  workspaceTools?: WorkspaceToolSource;
  /** Whether outputs are checked against their schemas (RESPONSE_VALIDATION, as routes' responses are). */
  validateOutputs: boolean;
}) {
  const { uow, read, logger, credits } = deps;
  const byName = new Map(deps.tools.map((tool) => [tool.name, tool]));
  if (byName.size !== deps.tools.length) throw new Error('two capabilities share a name');

  const reserve = (m: EntityManager, principal: Principal, kind: CreditKind) =>
    reserveCredits(m, { tenantId: principal.tenantId, workspaceId: principal.workspaceId, kind });
  const free = async () => {};
  /** A result that does not match its tool's output schema is Weft's bug: a 500, never stored (answer-check.ts). */
  const outputChecks = new WeakMap<AnyCapability, ((result: unknown) => unknown) | undefined>();
  const shapeOutput = (capability: AnyCapability, result: unknown): unknown => {
    if (!outputChecks.has(capability)) {
      const what = `output of ${capability.name}`;
      outputChecks.set(capability, answerCheck(capability.output as z.ZodType, what, deps.validateOutputs));
    }
    const check = outputChecks.get(capability);
    return check ? check(result) : result;
  };

  async function invokeRead(
    capability: ReadCapability<any, any, any>,
    call: CapabilityCall,
    input: unknown,
    chargeKey: string | undefined,
  ): Promise<InvokeOutcome> {
    const kind = creditKindOf(capability);
    let receipt: CreditReceipt | null = null;
    const run = async (readCall: ReadCall<unknown>): Promise<InvokeOutcome> => {
      const result = shapeOutput(capability, await capability.handler(readCall, input));
      return {
        envelope: { result, credits_charged: readCall.receipt?.amount ?? 0, idempotency_key: call.idempotencyKey },
        replayed: false,
      };
    };
    try {
      if (!kind) return await run({ ...call, prepared: undefined, confirm: free });
      return await credits.chargeFor(
        call.principal,
        kind,
        (charge) => {
          receipt = charge.receipt;
          return run({ ...call, receipt: charge.receipt, prepared: charge.prepared, confirm: charge.confirm });
        },
        {
          prepare: async (m: EntityManager) => capability.prepare?.(m),
          ...(capability.price ? { quantity: capability.price.quantity } : {}),
          ...(chargeKey ? { idempotencyKey: chargeKey, chargeAgainAfterRefund: true } : {}),
        },
      );
    } catch (error) {
      // chargeFor has refunded the charge by now (or left it to the reconcile pass).
      await capability
        .onFailure?.({ ...call, receipt }, input, error)
        .catch((auditError) => logger.error({ err: auditError, tool: capability.name }, 'capability audit failed'));
      throw error;
    }
  }

  /**
   * One transaction: replay a stored envelope (409 `idempotency_key_reused` for another tool or
   * body); else take the key (409 `idempotency_key_in_use` while another call holds it), charge, run
   * the handler and store the envelope. A failure rolls all of it back: nothing stored, nothing charged.
   * A key the caller sent is first looked up in one statement, so a retry of a finished call replays
   * without a transaction; a key this process made (`fresh`: no key was sent) is a new random uuid
   * nobody else can hold or have stored, so it skips the lookups and the lock.
   */
  async function invokeWrite(
    capability: WriteCapability<any, any>,
    call: CapabilityCall,
    input: unknown,
    raw: unknown,
    fresh: boolean,
  ): Promise<InvokeOutcome> {
    const { principal, idempotencyKey: key } = call;
    const hash = requestHash(raw ?? {});
    const hooks: (() => void)[] = [];
    const replay = (stored: StoredKey) => replayStored(capability, stored, hash);
    if (!fresh) {
      // A finished key replays without the lock, so concurrent retries of a finished call all replay.
      const finished = await findKeyOutsideTransaction(read, scopeOf(principal), key);
      if (finished && !finished.expired) return replay(finished);
    }
    const base = scopeOf(principal);
    // The graph's version rows of the handler's writes name the tool, the call and the run (issue 31).
    const scope = {
      ...base,
      actor: { ...base.actor, capability: capability.name, capabilityCall: key, runId: call.runId },
    };
    const outcome = await uow(scope, async (m): Promise<InvokeOutcome> => {
      if (!fresh) {
        if (!(await tryLockKey(m, principal.workspaceId, key))) {
          throw new ConflictError({
            error: 'idempotency_key_in_use',
            message: 'A request with this Idempotency-Key is still running; retry once it has finished',
          });
        }
        // Looked up again under the lock: the holder may have committed since the first look.
        const stored = await findKey(m, key);
        if (stored && !stored.expired) return replay(stored);
        if (stored) await deleteKey(m, principal.workspaceId, key);
      }

      const kind = creditKindOf(capability);
      const receipt = kind ? await reserve(m, principal, kind) : null;
      const result = shapeOutput(
        capability,
        await capability.handler({ ...call, receipt, m, afterCommit: (hook) => hooks.push(hook) }, input),
      );
      const envelope: Envelope = { result, credits_charged: receipt?.amount ?? 0, idempotency_key: key };
      await storeKey(m, {
        workspaceId: principal.workspaceId,
        idempotencyKey: key,
        tool: capability.name,
        requestHash: hash,
        envelope: { ...envelope },
        userId: principal.userId,
      });
      return { envelope, replayed: false };
    });
    for (const hook of hooks) {
      try {
        hook();
      } catch (error) {
        logger.warn({ err: error, tool: capability.name }, 'capability after-commit hook failed');
      }
    }
    return outcome;
  }

  /**
   * A durable write: a finished key replays without running; else the handler runs outside any
   * transaction (its workflow is idempotent under the key, so a concurrent or retried call attaches
   * to the same work) and its envelope is stored after, under the key's lock. A call that finds the
   * lock held or the envelope stored by a concurrent twin answers with its own, equal, envelope.
   */
  async function invokeDurableWrite(
    capability: DurableWriteCapability<any, any>,
    call: CapabilityCall,
    input: unknown,
    raw: unknown,
    fresh: boolean,
  ): Promise<InvokeOutcome> {
    const { principal, idempotencyKey: key } = call;
    const hash = requestHash(raw ?? {});
    if (!fresh) {
      const finished = await findKeyOutsideTransaction(read, scopeOf(principal), key);
      if (finished && !finished.expired) return replayStored(capability, finished, hash);
    }
    const done = await capability.handler(call, input);
    const envelope: Envelope = {
      result: shapeOutput(capability, done.result),
      credits_charged: done.credits_charged,
      idempotency_key: key,
    };
    return uow(scopeOf(principal), async (m): Promise<InvokeOutcome> => {
      if (!(await tryLockKey(m, principal.workspaceId, key))) return { envelope, replayed: false };
      const stored = await findKey(m, key);
      if (stored && !stored.expired) return replayStored(capability, stored, hash);
      if (stored) await deleteKey(m, principal.workspaceId, key);
      await storeKey(m, {
        workspaceId: principal.workspaceId,
        idempotencyKey: key,
        tool: capability.name,
        requestHash: hash,
        envelope: { ...envelope },
        userId: principal.userId,
      });
      return { envelope, replayed: false };
    });
  }

  // MCP requires `type: "object"` at the top of a tool's schemas, and OpenAI's and Anthropic's tool
  // calling refuse a union there (and with it every request listing the tool): refused at start-up.
  const descriptions: CapabilityDescription[] = deps.tools.map((tool) => {
    const described = describeCapability(tool);
    for (const io of ['input', 'output'] as const) {
      const json = described[`${io}_schema`] as Record<string, unknown>;
      if (json.type !== 'object' || json.anyOf || json.oneOf || json.allOf) {
        throw new Error(`capability ${tool.name}: its ${io} schema must be one object at the top, not a union`);
      }
    }
    return described;
  });
  const registryAreas = new Set(deps.tools.map((tool) => tool.name.split('.')[0]));
  const workspaceToolsOf = async (workspaceId: string, pins?: ToolPins): Promise<readonly AnyCapability[]> =>
    deps.workspaceTools ? deps.workspaceTools.toolsOf(workspaceId, pins) : [];

  /**
   * A tool by name: the registry's, else one of the workspace's own (another workspace's is unknown),
   * as a run's `pins` kept it.
   */
  async function find(workspaceId: string, name: string, pins?: ToolPins): Promise<AnyCapability | undefined> {
    const known = byName.get(name);
    if (known || !name.includes('.')) return known;
    return (await workspaceToolsOf(workspaceId, pins)).find((tool) => tool.name === name);
  }

  return {
    tools: deps.tools,

    /** Name, tag, cost and JSON Schemas of every registry tool (the same for every workspace). */
    describe: (): readonly CapabilityDescription[] => descriptions,

    /** The registry's tools and then the workspace's own (GET /v1/cap, the MCP tool list, runs). */
    async toolsFor(workspaceId: string, pins?: ToolPins): Promise<readonly AnyCapability[]> {
      const own = await workspaceToolsOf(workspaceId, pins);
      return own.length === 0 ? deps.tools : [...deps.tools, ...own];
    },

    /** Every tool's description for one workspace: the registry's, then its connectors'. */
    async describeFor(workspaceId: string, pins?: ToolPins): Promise<readonly CapabilityDescription[]> {
      const own = await workspaceToolsOf(workspaceId, pins);
      return own.length === 0 ? descriptions : [...descriptions, ...own.map(describeCapability)];
    },

    find,

    /**
     * Calls a tool for `principal`: 404 for an unknown tool, 403 without its scope, 422 for a bad
     * input or key, 402 before any work when credits are short.
     */
    async invoke(
      principal: Principal,
      name: string,
      raw: unknown,
      options: InvokeOptions = {},
    ): Promise<InvokeOutcome> {
      const capability = await find(principal.workspaceId, name, options.pins);
      if (!capability) {
        const own = !registryAreas.has(name.split('.')[0]) && deps.workspaceTools?.unknown?.(name);
        throw own || new NotFoundError(`Unknown capability ${name}`);
      }
      const missing = scopesFor(capability).find((scope) => !principal.scopes.has(scope));
      if (missing) throw new ForbiddenError(`Missing scope ${missing}`);
      const input = parseInput(capability, raw);
      const call: CapabilityCall = {
        principal,
        idempotencyKey: parseKey(options.idempotencyKey),
        correlationId: options.correlationId ?? randomUUID(),
        ...(options.reclaimCorrelation ? { reclaimCorrelation: true } : {}),
        ...(options.runId ? { runId: options.runId } : {}),
        startedAtMs: Date.now(),
        receipt: null,
      };
      const fresh = options.idempotencyKey === undefined;
      if (capability.access === 'read') return invokeRead(capability, call, input, options.chargeKey);
      return capability.durable
        ? invokeDurableWrite(capability, call, input, raw, fresh)
        : invokeWrite(capability, call, input, raw, fresh);
    },
  };
}

export type CapabilityService = ReturnType<typeof createCapabilityService>;
