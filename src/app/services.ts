import type { ApprovalSubject } from '../approvals/subject';
import type { AnyCapability } from '../capabilities/define';
import type { Feature } from './feature';
import type { FeatureServices } from './features';
import type { Kernel } from './runtime';

/**
 * What a feature's service factory may use: the kernel, every other feature's service (built on
 * first access), every feature's agent tools, and a hook to release what the service holds when the
 * runtime closes. A manifest's factory names the narrow part it needs.
 */
export interface ServiceContext extends Kernel {
  services: FeatureServices;
  /** Every feature's agent tools, from the manifests (src/app/capabilities.ts); the capability registry's input. */
  tools(): readonly AnyCapability[];
  /** Runs when the runtime closes (before Temporal and the database go), latest first. */
  onClose(hook: () => Promise<void>): void;
  /** Every feature's approval subjects, from the manifests, built on first call; the approvals service's input. */
  approvalSubjects(): readonly ApprovalSubject[];
}

/** A manifest's `services`: one factory per service name. */
export type ServiceFactories = { readonly [name: string]: (ctx: ServiceContext) => unknown };

/** The services of one manifest, by the return types of its factories. */
type ServicesOfManifest<M> = M extends { services: infer F }
  ? { [K in keyof F]: F[K] extends (...args: never[]) => infer S ? S : never }
  : unknown;

type Intersect<Ms> = Ms extends readonly [infer Head, ...infer Rest]
  ? ServicesOfManifest<Head> & Intersect<Rest>
  : unknown;

/** Every service the manifests in `Ms` (a tuple) declare, by name: what `runtime.services` is. */
export type ServicesOf<Ms extends readonly unknown[]> = Flatten<Intersect<Ms>>;
type Flatten<T> = { [K in keyof T]: T[K] };

export interface ServiceRegistry {
  /** Every declared service as a lazy getter: the first access builds it (and what it uses), later ones reuse it. */
  services: Record<string, unknown>;
  /** Every declared name, in the features' order. */
  names: readonly string[];
  /** Builds every service not built yet (the runtime does, so a misconfigured one fails at boot). */
  buildAll(): void;
  /** Runs the close hooks the built services registered, latest first. */
  close(): Promise<void>;
}

/**
 * The services of `features`, each built on first access by the feature that declares it. Two
 * features declaring one name throw here; a service that needs itself, directly or through others,
 * throws with the path (`runs → capabilities → runs`).
 */
export function createServiceRegistry(
  features: readonly Pick<Feature, 'name' | 'services' | 'approvalSubjects'>[],
  context: Omit<ServiceContext, 'services' | 'onClose' | 'approvalSubjects'>,
): ServiceRegistry {
  const factories = new Map<string, { feature: string; build: (ctx: ServiceContext) => unknown }>();
  for (const feature of features) {
    for (const [name, build] of Object.entries(feature.services ?? {})) {
      const earlier = factories.get(name);
      if (earlier) {
        throw new Error(`two features declare the service '${name}': ${earlier.feature} and ${feature.name}`);
      }
      factories.set(name, { feature: feature.name, build });
    }
  }

  const built = new Map<string, unknown>();
  const building: string[] = [];
  const hooks: (() => Promise<void>)[] = [];
  const services: Record<string, unknown> = {};
  let subjects: readonly ApprovalSubject[] | undefined;
  const ctx: ServiceContext = {
    ...context,
    services: services as FeatureServices,
    onClose: (hook) => hooks.push(hook),
    approvalSubjects: () => {
      subjects ??= features.flatMap((feature) => feature.approvalSubjects?.(ctx) ?? []);
      return subjects;
    },
  };

  function resolve(name: string): unknown {
    if (built.has(name)) return built.get(name);
    if (building.includes(name)) {
      throw new Error(`service cycle: ${[...building.slice(building.indexOf(name)), name].join(' → ')}`);
    }
    const factory = factories.get(name);
    if (!factory) throw new Error(`no feature declares the service '${name}'`);
    building.push(name);
    try {
      const service = factory.build(ctx);
      built.set(name, service);
      return service;
    } finally {
      building.pop();
    }
  }

  for (const name of factories.keys()) {
    Object.defineProperty(services, name, { enumerable: true, get: () => resolve(name) });
  }
  Object.freeze(services);

  return {
    services,
    names: [...factories.keys()],
    buildAll() {
      for (const name of factories.keys()) resolve(name);
    },
    async close() {
      for (const hook of hooks.splice(0).reverse()) await hook();
    },
  };
}
