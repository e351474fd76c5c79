import type { Config } from '../platform/config';
import type { ApiTag } from '../platform/openapi/tags';
import { consoleRoutes } from './routes';

/** The reviewer console: a browser page over this API. */
export const consoleFeature = {
  name: 'console',
  tags: ['console'] satisfies ApiTag[],
  routes: (runtime: { config: Config }) => consoleRoutes(runtime.config),
};
