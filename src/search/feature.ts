import { searchRoutes } from './routes';
import type { SearchService } from './service';

/** Vector, structural, keyword and hybrid search (metered). */
export const searchFeature = {
  name: 'search',
  tags: {
    search: 'Vector, structural, keyword and hybrid search over nodes (metered).',
  },
  routes: (runtime: { services: { search: SearchService } }) => searchRoutes(runtime.services.search),
};
