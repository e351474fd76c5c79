import type { TemporalHandle } from '../platform/temporal/connection';
import { CodeSymbol } from './entities';
import { codeEmbeddingRequested } from './events';
import { enqueueCodeEmbeddings } from './outbox-handler';
import { codeRoutes } from './routes';
import type { CodeService } from './service';

/** The code graph: ingest batches and symbol context. */
export const codeFeature = {
  name: 'code',
  tags: {
    code: 'The code graph: bulk ingest of a repository’s files, symbols, calls, tests and commits as code.* nodes.',
  },
  entities: [CodeSymbol],
  routes: (runtime: { services: { code: CodeService } }) => codeRoutes(runtime.services.code),
  events: [codeEmbeddingRequested],
  // An ingest batch's new or changed code nodes: embed them.
  outboxHandlers: (temporal: TemporalHandle) => [enqueueCodeEmbeddings(temporal)],
};
