import type { Middleware } from 'koa';
import type { ApprovalSubject } from '../approvals/subject';
import type { AnyCapability } from '../capabilities/define';
import type { EdgeGuard } from '../graph/edge-guards';
import type { RateLimiter } from '../platform/api/rate-limit';
import type { AnyRoute } from '../platform/api/route';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { TagDescriptions } from '../platform/openapi/tags';
import type { EventContract } from '../platform/outbox/event';
import type { OutboxHandler } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import type { CapabilityDeps } from './capabilities';
import type { Runtime } from './runtime';
import type { ServiceContext, ServiceFactories } from './services';

/**
 * What a feature declares about itself, once, in `src/<feature>/feature.ts`: plain data and
 * functions. The manifests name their own narrow dependencies (`{ services: { runs: RunService } }`)
 * and import nothing from here; `src/app/features.ts` checks each against this shape and derives
 * `Runtime['services']` from their `services`.
 */
export interface Feature {
  /** The folder's name. */
  name: string;
  /**
   * The services it builds, one factory per name (a name belongs to one feature): each gets the
   * kernel (src/app/runtime.ts), the other features' services (`ctx.services.credits`, built on
   * first access), the agent tools (`ctx.tools()`) and `ctx.onClose` for what it must release.
   * What two of its services share is a service too (`triggerSealer`). `runtime.services` is typed
   * from these factories' return types.
   */
  services?: ServiceFactories;
  /** The OpenAPI tags it introduces, with their descriptions (its routes may also use another feature's). */
  tags?: TagDescriptions;
  /** Its TypeORM entity classes (the tables come from migrations). */
  entities?: readonly (abstract new (
    ...args: never
  ) => unknown)[];
  /** Its HTTP routes, declared without I/O (the offline OpenAPI document calls this too). */
  routes?: (runtime: Runtime, rateLimiter?: RateLimiter) => readonly AnyRoute[];
  /** Koa middleware it needs ahead of the router (after body parsing), in order. */
  middleware?: (runtime: Runtime) => readonly Middleware[];
  /** The outbox events it writes, by their contracts (the relay dead-letters any other type). */
  events?: readonly EventContract[];
  /** The workflows committed outbox events start (or the Temporal state they apply), each with its contract. */
  outboxHandlers?: (temporal: TemporalHandle, uow: UnitOfWork) => readonly OutboxHandler[];
  /** Its recurring jobs. */
  schedules?: readonly MaintenanceSchedule[];
  /** Rules it holds over every edge the graph writes, whoever writes it (src/graph/edge-guards.ts). */
  edgeGuards?: readonly EdgeGuard[];
  /**
   * What its approvals decide on (a run's step, a staged change-set): each subject the approvals
   * inbox lists, shows and resolves by the kind stored with the approval. Gets the service context.
   */
  approvalSubjects?: (ctx: ServiceContext) => readonly ApprovalSubject[];
  /** Its agent tools (`/v1/cap`, runs' steps, MCP). */
  capabilities?: (deps: CapabilityDeps) => readonly AnyCapability[];
}
