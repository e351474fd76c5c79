import type { EntityManager } from 'typeorm';
import type { z } from 'zod';
import type { CreditReceipt } from '../credits/repository';
import type { Principal } from '../platform/auth/principal';
import type { ScopeName } from '../platform/auth/scopes';
import type { CreditKind } from '../rules/costs';

/** knowledge-graph-service-api.md §4.2: every tool is tagged `capabilities:read` or `capabilities:write`. */
export type CapabilityAccess = 'read' | 'write';

/** What a handler knows about the call it serves, whichever door it came through. */
export interface CapabilityCall {
  principal: Principal;
  /** The caller's Idempotency-Key, or the one the server generated. */
  idempotencyKey: string;
  /** The request's correlation id (X-Correlation-Id over HTTP), for audit rows. */
  correlationId: string;
  /** The correlation id is the caller's own (a run's step): a retried call may take over its earlier claim. */
  reclaimCorrelation?: boolean;
  /** The run whose step made the call, when a run did. */
  runId?: string;
  /** When the call arrived (epoch ms), for audit durations. */
  startedAtMs: number;
  /** The reservation made before the handler ran; null for a free tool. */
  receipt: CreditReceipt | null;
}

/** A write handler runs inside the call's transaction: its effect and the idempotency row commit together. */
export interface WriteCall extends CapabilityCall {
  m: EntityManager;
  /** Runs once the transaction has committed (e.g. kicking the outbox); never after a rollback. */
  afterCommit(hook: () => void): void;
}

/** A read handler runs outside the layer's transactions; a paid one may confirm its charge in its own. */
export interface ReadCall<P> extends CapabilityCall {
  prepared: P | undefined;
  /**
   * Confirms the charge inside the handler's last transaction (`credits.chargeFor`), when nothing
   * after it can fail, as that transaction's last statement (it commits it); otherwise the layer
   * confirms once the handler returns. A no-op for free tools.
   */
  confirm(m: EntityManager): Promise<void>;
}

interface CapabilityBase<I extends z.ZodType, O extends z.ZodType> {
  /** `<area>.<verb>`, the path segment of `POST /v1/cap/<name>`. */
  name: string;
  description: string;
  input: I;
  output: O;
  /** A valid input, for the OpenAPI document (checked against `input` at start-up). */
  example: z.input<I>;
  /**
   * Scopes the tool needs beyond `capabilities:read` or `capabilities:write`: those of the REST route
   * doing the same work (`runs.dispatch` needs `runs:write`, as `POST /v1/runs` does).
   */
  scopes?: readonly ScopeName[];
  /** The tool's own outcomes besides success (403, 404, 409 …), for the OpenAPI document. */
  errors?: Partial<Record<number, string>>;
  /**
   * A write tool whose repeat with the same input changes nothing more, key or no key (MCP's
   * `idempotentHint`). Every write tool replays a repeated Idempotency-Key; this says more.
   */
  repeatSafe?: true;
  /** A write tool that deletes or overwrites what it touches (MCP's `destructiveHint`). */
  destructive?: true;
  /**
   * A price set per tool rather than by name in src/rules/costs.ts (a connector's `credits_per_call`):
   * `quantity` units of `kind`, charged like any priced tool.
   */
  price?: { kind: CreditKind; quantity: number };
  /** The JSON Schemas clients are told, when the tool's own came from elsewhere (a remote tool's). */
  jsonSchemas?: { input: Record<string, unknown>; output: Record<string, unknown> };
  /** Reaches outside Weft and is not known to be read-only: without an approval rule, a run asks a person first. */
  approvalByDefault?: true;
  /** Reaches outside Weft (MCP's `openWorldHint`). */
  openWorld?: true;
}

/**
 * Tools that belong to one workspace (its connectors' remote tools), looked up on each call: the
 * static registry is the same for everyone, these are only ever seen by their own workspace.
 */
/**
 * The versions of the workspace's own tools a run keeps (issue 41): connector id → the version it had
 * when the run started. Connectors not named are not the run's; absent pins mean the current versions.
 */
export type ToolPins = Readonly<Record<string, number>>;

export interface WorkspaceToolSource {
  toolsOf(workspaceId: string, pins?: ToolPins): Promise<readonly AnyCapability[]>;
  /** The 404 for a name none of the workspace's tools has (a removed connector's, say). */
  unknown?(name: string): Error;
}

/**
 * A read tool: caches nothing and runs outside any transaction of the layer (it may call a model).
 * Its price, if any, is in `src/rules/costs.ts`; the layer charges through `credits.chargeFor`
 * before `handler` runs, confirms when it succeeds and refunds when it fails.
 */
export interface ReadCapability<I extends z.ZodType, O extends z.ZodType, P = undefined> extends CapabilityBase<I, O> {
  access: 'read';
  /** Runs in the charge's transaction (paid tools only), so reading settings costs no second one. */
  prepare?(m: EntityManager): Promise<P>;
  handler(call: ReadCall<P>, input: z.output<I>): Promise<z.input<O>>;
  /** After a failure (a 402 included) and its refund: for audit rows. Its own errors are logged, not thrown. */
  onFailure?(call: CapabilityCall, input: z.output<I>, error: unknown): Promise<void>;
}

/** A write tool: idempotent by key; it must do its work through `call.m` and nothing outside it. */
export interface WriteCapability<I extends z.ZodType, O extends z.ZodType> extends CapabilityBase<I, O> {
  access: 'write';
  durable?: never;
  handler(call: WriteCall, input: z.output<I>): Promise<z.input<O>>;
}

/**
 * A write tool whose work is a durable workflow of its own (`ontology.remember`: a prompt). It runs
 * outside the layer's transactions, since it waits on that workflow, and the workflow charges (before
 * any model call), refunds and deduplicates itself under a name derived from `call.idempotencyKey`;
 * the layer stores the envelope once the handler returns, so a repeated key replays it.
 */
export interface DurableWriteCapability<I extends z.ZodType, O extends z.ZodType> extends CapabilityBase<I, O> {
  access: 'write';
  durable: true;
  handler(call: CapabilityCall, input: z.output<I>): Promise<{ result: z.input<O>; credits_charged: number }>;
}

export type Capability<I extends z.ZodType, O extends z.ZodType, P = undefined> =
  | ReadCapability<I, O, P>
  | WriteCapability<I, O>;

// The registry holds tools of many shapes; it only needs this erased view.
export type AnyCapability =
  | ReadCapability<any, any, any>
  | WriteCapability<any, any>
  | DurableWriteCapability<any, any>;

/** Declares a tool; the identity function exists to infer the handler's types from the schemas. */
export const defineCapability = <I extends z.ZodType, O extends z.ZodType, P = undefined>(
  capability: Capability<I, O, P>,
): Capability<I, O, P> => capability;

/** Declares a durable write tool (see DurableWriteCapability), inferring its handler's types. */
export const defineDurableCapability = <I extends z.ZodType, O extends z.ZodType>(
  capability: DurableWriteCapability<I, O>,
): DurableWriteCapability<I, O> => capability;
