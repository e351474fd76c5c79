import type { CreditService } from '../credits/service';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { EmbeddingProvider } from '../platform/llm/embedding/contract';
import { searchRoutes } from './routes';
import type { SearchService } from './service';
import { createSearchService } from './service';

/** Vector, structural, keyword and hybrid search (metered). */
export const searchFeature = {
  name: 'search',
  services: {
    search: (ctx: { uow: UnitOfWork; embeddings: EmbeddingProvider; services: { credits: CreditService } }) =>
      createSearchService({ uow: ctx.uow, embeddings: ctx.embeddings, credits: ctx.services.credits }),
  },
  tags: {
    search: 'Vector, structural, keyword and hybrid search over nodes (metered).',
  },
  routes: (runtime: { services: { search: SearchService } }) => searchRoutes(runtime.services.search),
};
