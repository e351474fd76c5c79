import { createCapabilityService } from '../capabilities/service';
import { loadConfig } from '../platform/config';
import { buildOpenApiDocument } from '../platform/openapi/document';
import { allCapabilities } from './capabilities';
import { API_TAGS } from './features';
import { allRoutes } from './http';
import type { Runtime } from './runtime';

/**
 * A runtime whose services exist only to be named: route factories may keep references to them,
 * but calling anything throws. Routes are declared without I/O, so the document needs nothing more.
 */
function documentationRuntime(): Runtime {
  const unusable: object = new Proxy(() => undefined, {
    get: (_target, key) => (key === 'then' ? undefined : unusable),
    apply: () => {
      throw new Error('documentation-only runtime: route factories must not call services while declaring routes');
    },
  });
  const config = loadConfig({});
  // The capability routes are generated from the registry's declarations, which do no I/O either.
  const capabilities = createCapabilityService({
    uow: unusable as never,
    read: unusable as never,
    logger: unusable as never,
    credits: unusable as never,
    tools: allCapabilities({
      uow: unusable as never,
      outbox: unusable as never,
      sessionTtlSeconds: config.AGENT_SESSION_TTL_SECONDS,
      prompts: unusable as never,
      search: unusable as never,
    }),
  });
  const services = new Proxy({}, { get: (_target, key) => (key === 'capabilities' ? capabilities : unusable) });
  return new Proxy({} as Runtime, {
    get: (_target, key) => (key === 'config' ? config : key === 'services' ? services : unusable),
  });
}

/** The OpenAPI document of every route, built without a database, Temporal or a listening server. */
export const offlineOpenApiDocument = () => buildOpenApiDocument(allRoutes(documentationRuntime()), API_TAGS);
