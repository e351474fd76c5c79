import type { ApiTag } from '../platform/openapi/tags';
import { searchRoutes } from './routes';
import type { SearchService } from './service';

/** Vector, structural, keyword and hybrid search (metered). */
export const searchFeature = {
  name: 'search',
  tags: ['search'] satisfies ApiTag[],
  routes: (runtime: { services: { search: SearchService } }) => searchRoutes(runtime.services.search),
};
