import { loadConfig } from '../platform/config';
import { buildOpenApiDocument } from '../platform/openapi/document';
import { allCapabilities } from './capabilities';
import { API_TAGS, FEATURES } from './features';
import { allRoutes } from './http';
import type { Kernel, Runtime } from './runtime';
import { createServiceRegistry } from './services';

// Every part of the kernel but its configuration (the offline runtime has none of them).
const KERNEL_PARTS = [
  'logger',
  'dataSource',
  'uow',
  'read',
  'statement',
  'jwt',
  'usage',
  'authenticator',
  'temporal',
  'outbox',
  'sealer',
  'embeddings',
] as const satisfies readonly Exclude<keyof Kernel, 'config'>[];

/**
 * A runtime whose kernel exists only to be named: the features' services are built from their
 * manifests as usual (building one does no I/O; test/unit/features.test.ts holds them to it), and
 * route factories may keep references to them, but calling anything in the kernel throws. Routes are
 * declared without I/O, so the document needs nothing more.
 */
function documentationRuntime(): Runtime {
  const unusable: object = new Proxy(() => undefined, {
    get: (_target, key) => (key === 'then' ? undefined : unusable),
    apply: () => {
      throw new Error('documentation-only runtime: route factories must not call services while declaring routes');
    },
  });
  const config = loadConfig({});
  const kernel = {
    config,
    ...Object.fromEntries(KERNEL_PARTS.map((part) => [part, unusable])),
  } as unknown as Kernel;
  const registry = createServiceRegistry(FEATURES, {
    ...kernel,
    // The capability routes are generated from the registry's declarations, which do no I/O either.
    tools: () =>
      allCapabilities({
        uow: kernel.uow,
        read: kernel.read,
        outbox: kernel.outbox,
        sessionTtlSeconds: config.AGENT_SESSION_TTL_SECONDS,
        prompts: registry.services.prompts as Runtime['services']['prompts'],
        search: registry.services.search as Runtime['services']['search'],
        promptApi: registry.services.promptApi as Runtime['services']['promptApi'],
        nodes: registry.services.nodes as Runtime['services']['nodes'],
        traversals: registry.services.traversals as Runtime['services']['traversals'],
        versions: registry.services.versions as Runtime['services']['versions'],
        code: registry.services.code as Runtime['services']['code'],
        runs: () => registry.services.runs as Runtime['services']['runs'],
        approvals: () => registry.services.approvals as Runtime['services']['approvals'],
        waitpoints: () => registry.services.waitpoints as Runtime['services']['waitpoints'],
      }),
  });
  return { ...kernel, services: registry.services as Runtime['services'], close: async () => {} };
}

/** The OpenAPI document of every route, built without a database, Temporal or a listening server. */
export const offlineOpenApiDocument = () => buildOpenApiDocument(allRoutes(documentationRuntime()), API_TAGS);
