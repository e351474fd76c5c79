import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { entities } from '../../src/app/entities';
import type { Feature } from '../../src/app/feature';
import { FEATURES } from '../../src/app/features';
import type { ServiceContext } from '../../src/app/services';
import { createServiceRegistry } from '../../src/app/services';
import { loadConfig } from '../../src/platform/config';

const SRC = resolve(__dirname, '../../src');
// Not features: the floors themselves, the generated client and the CLI.
const NOT_FEATURES = new Set(['app', 'platform', 'rules', 'client', 'cli']);
// The roles that only reach the app through a manifest.
const COMPOSED_ROLES = ['routes.ts', 'entities.ts', 'outbox-handler.ts', 'capabilities.ts', 'service.ts'];

// A kernel whose parts may be kept but not used: building a service must do no I/O.
const unusable: object = new Proxy(() => undefined, {
  get: (_target, key) => (key === 'then' ? undefined : unusable),
  apply: () => {
    throw new Error('a service factory used the kernel while being built');
  },
});
const kernel = () =>
  new Proxy({ config: loadConfig({}), tools: () => [] } as unknown as Omit<ServiceContext, 'services' | 'onClose'>, {
    get: (target, key) => (Object.hasOwn(target, key) ? target[key as keyof typeof target] : unusable),
  });

/** The features' own services, each factory counting its calls in `calls`. */
function counted(features: readonly Feature[], calls: Map<string, number>): Feature[] {
  return features.map((feature) => ({
    ...feature,
    services: Object.fromEntries(
      Object.entries(feature.services ?? {}).map(([name, build]) => [
        name,
        (ctx: ServiceContext) => {
          calls.set(name, (calls.get(name) ?? 0) + 1);
          return build(ctx);
        },
      ]),
    ),
  }));
}

describe('feature manifests (src/<feature>/feature.ts, listed in src/app/features.ts)', () => {
  it('every folder with routes, entities, outbox handlers, capabilities or services has a manifest in the list', () => {
    const folders = readdirSync(SRC, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && !NOT_FEATURES.has(entry.name))
      .map((entry) => entry.name)
      .filter((name) => COMPOSED_ROLES.some((role) => existsSync(join(SRC, name, role))));
    expect(folders).to.not.be.empty;
    for (const folder of folders) {
      const file = join(SRC, folder, 'feature.ts');
      expect(existsSync(file), `src/${folder}/feature.ts`).to.equal(true);
      const manifests = Object.values(require(file) as Record<string, unknown>);
      expect(
        manifests.some((manifest) => (FEATURES as readonly unknown[]).includes(manifest)),
        `src/${folder}/feature.ts is in src/app/features.ts`,
      ).to.equal(true);
    }
  });

  it('names each feature once and lists each entity once', () => {
    const names = FEATURES.map((feature) => feature.name);
    expect(new Set(names).size).to.equal(names.length);
    expect(new Set(entities).size).to.equal(entities.length);
  });

  it('declares each service in exactly one feature', () => {
    const names = FEATURES.flatMap((feature) => Object.keys(feature.services ?? {}));
    expect(names).to.include.members(['runs', 'capabilities', 'search', 'triggerIntake', 'mcp']);
    expect(names.filter((name, index) => names.indexOf(name) !== index)).to.deep.equal([]);
  });
});

describe('the service registry (src/app/services.ts)', () => {
  it('builds every feature service once, each on first access, without touching the kernel', async () => {
    const calls = new Map<string, number>();
    const registry = createServiceRegistry(counted(FEATURES, calls), kernel());
    expect(calls.size, 'nothing is built before it is asked for').to.equal(0);

    // `runs` needs the capability registry, which needs credits and the connectors (the workspace's
    // own tools), and the run callbacks with their A2A body format: asking for it builds those six only.
    const runs = registry.services.runs;
    expect([...calls.keys()].sort()).to.deep.equal([
      'a2aPushFormat',
      'capabilities',
      'connectors',
      'credits',
      'runCallbacks',
      'runs',
    ]);
    expect(registry.services.runs).to.equal(runs);

    registry.buildAll();
    expect([...calls.keys()].sort()).to.deep.equal([...registry.names].sort());
    expect([...calls.values()].every((count) => count === 1)).to.equal(true);
    // The intake's filter pool is released with the runtime.
    await registry.close();
  });

  it('refuses two features declaring one service name, naming both', () => {
    const features = [
      { name: 'first', services: { clock: () => 1 } },
      { name: 'second', services: { clock: () => 2 } },
    ];
    expect(() => createServiceRegistry(features, kernel())).to.throw(
      "two features declare the service 'clock': first and second",
    );
  });

  it('refuses a cycle with its path, and builds nothing of it', () => {
    const built: string[] = [];
    const features = [
      {
        name: 'loop',
        services: {
          a: (ctx: ServiceContext) => (ctx.services as Record<string, unknown>).b,
          b: (ctx: ServiceContext) => (ctx.services as Record<string, unknown>).c,
          c: (ctx: ServiceContext) => (ctx.services as Record<string, unknown>).a,
          d: () => built.push('d'),
        },
      },
    ];
    const registry = createServiceRegistry(features, kernel());
    expect(() => registry.services.b).to.throw('service cycle: b → c → a → b');
    expect(() => registry.services.a).to.throw('service cycle: a → b → c → a');
    expect(registry.services.d).to.equal(1);
  });

  it('closes what the built services hold, latest first, once', async () => {
    const closed: string[] = [];
    const features = [
      {
        name: 'held',
        services: {
          pool: (ctx: ServiceContext) => ctx.onClose(async () => void closed.push('pool')),
          cache: (ctx: ServiceContext) => ctx.onClose(async () => void closed.push('cache')),
          idle: (ctx: ServiceContext) => ctx.onClose(async () => void closed.push('idle')),
        },
      },
    ];
    const registry = createServiceRegistry(features, kernel());
    void registry.services.pool;
    void registry.services.cache;
    await registry.close();
    await registry.close();
    expect(closed).to.deep.equal(['cache', 'pool']);
  });
});
