import type { Runtime } from '../../runtime';
import { allRoutes } from '../api/app';
import { loadConfig } from '../config';
import { buildOpenApiDocument } from './document';

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
  return new Proxy({} as Runtime, { get: (_target, key) => (key === 'config' ? config : unusable) });
}

/** The OpenAPI document of every route, built without a database, Temporal or a listening server. */
export const offlineOpenApiDocument = () => buildOpenApiDocument(allRoutes(documentationRuntime()));
