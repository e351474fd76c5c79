import type { Config } from '../platform/config';
import { consoleRoutes } from './routes';

/** The reviewer console: a browser page over this API. */
export const consoleFeature = {
  name: 'console',
  tags: {
    console: 'The reviewer console: a browser page over this API (approvals, merges, runs, graph, credits).',
  },
  routes: (runtime: { config: Config }) => consoleRoutes(runtime.config),
};
