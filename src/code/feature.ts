import type { TemporalHandle } from '../platform/temporal/connection';
import { CodeSymbol } from './entities';
import { enqueueCodeEmbeddings } from './outbox-handler';
import { codeRoutes } from './routes';
import type { CodeService } from './service';
import { CODE_EMBEDDING_EVENT } from './workflow';

/** The code graph: ingest batches and symbol context. */
export const codeFeature = {
  name: 'code',
  tags: {
    code: 'The code graph: bulk ingest of a repository’s files, symbols, calls, tests and commits as code.* nodes.',
  },
  entities: [CodeSymbol],
  routes: (runtime: { services: { code: CodeService } }) => codeRoutes(runtime.services.code),
  outboxHandlers: (temporal: TemporalHandle) => ({
    // An ingest batch's new or changed code nodes: embed them.
    [CODE_EMBEDDING_EVENT]: [enqueueCodeEmbeddings(temporal)],
  }),
};
