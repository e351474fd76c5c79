import type { CreditService } from '../credits/service';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { createCodeBatchPurger } from './batch-purge';
import { CodeSymbol } from './entities';
import { codeEmbeddingRequested } from './events';
import { enqueueCodeEmbeddings } from './outbox-handler';
import { codeRoutes } from './routes';
import type { CodeService } from './service';
import { createCodeService } from './service';

/** The code graph: ingest batches and symbol context. */
export const codeFeature = {
  name: 'code',
  services: {
    /** The code graph: ingest batches (and their workflow's step) and symbol-context. */
    code: (ctx: {
      uow: UnitOfWork;
      temporal: TemporalHandle;
      outbox: OutboxRelay;
      services: { credits: CreditService };
    }) =>
      createCodeService({ uow: ctx.uow, temporal: ctx.temporal, outbox: ctx.outbox, credits: ctx.services.credits }),
    /** Deletes stored ingest batches past their retention (run by the capability-key-purge schedule). */
    codeBatches: (ctx: { uow: UnitOfWork }) => createCodeBatchPurger({ uow: ctx.uow }),
  },
  tags: {
    code: 'The code graph: bulk ingest of a repository’s files, symbols, calls, tests and commits as code.* nodes.',
  },
  entities: [CodeSymbol],
  routes: (runtime: { services: { code: CodeService } }) => codeRoutes(runtime.services.code),
  events: [codeEmbeddingRequested],
  // An ingest batch's new or changed code nodes: embed them.
  outboxHandlers: (temporal: TemporalHandle) => [enqueueCodeEmbeddings(temporal)],
};
