import type { EntityManager } from 'typeorm';
import type { CreditService } from '../credits/service';
import { toNodeResponse } from '../graph/repository';
import { baseSalienceFor } from '../importance/salience';
import { readOntologyConfig } from '../ontology-config/service';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { BadRequestError, ConflictError, DeadlineExceededError, NotFoundError } from '../platform/errors';
import type { OutboxRelay } from '../platform/outbox/relay';
import { enqueueEvent } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { LIMITS } from '../rules/limits';
import { enableIterativeIndexScan } from '../search/repository';
import { registerType } from '../type-catalog/service';
import { deleteCodeBatch, insertCodeBatch, lockCodeBatch, markCodeBatchApplied } from './batches-repository';
import { codeEmbeddingRequested } from './events';
import { nodeTypeOf, symbolKey } from './keys';
import { contextPageStarts, nextCursors } from './paging';
import type { EdgeValues, SymbolValues } from './repository';
import {
  insertSymbolNodes,
  knownSymbols,
  liveNodeById,
  liveSymbolNodes,
  nodesByNameAndType,
  recordSymbols,
  softDeleteIncidentCodeEdges,
  softDeleteUnseenEdges,
  softDeleteUnseenSymbols,
  symbolContext,
  updateSymbolNodes,
  upsertCodeEdges,
} from './repository';
import type { CodeIngestRequest, CodeIngestResponse, SymbolContextRequest, SymbolContextResponse } from './schemas';
import type { CodeBatchResult, CodeIndexInput } from './workflow';
import { codeIndexWorkflow, codeIndexWorkflowId } from './workflow';

/** How many candidates a 409 lists for an ambiguous (name, type). */
const AMBIGUOUS_CANDIDATES = 10;

/** A batch's symbols and commits as node values, keyed (the last of a repeated key wins). */
function nodeValuesOf(batch: CodeIngestRequest): Map<string, SymbolValues> {
  const values = new Map<string, SymbolValues>();
  for (const symbol of batch.symbols) {
    const key = symbolKey(symbol.kind, symbol.path, symbol.name);
    const type = nodeTypeOf(symbol.kind);
    const properties: Record<string, unknown> = { repo: batch.repo, key, path: symbol.path };
    for (const field of ['line', 'end_line', 'signature', 'doc'] as const) {
      if (symbol[field] !== undefined) properties[field] = symbol[field];
    }
    values.set(key, { key, type, name: symbol.name, properties, baseSalience: baseSalienceFor(type) });
  }
  for (const commit of batch.commits) {
    const type = nodeTypeOf('commit');
    const properties = {
      repo: batch.repo,
      key: commit.sha,
      sha: commit.sha,
      message: commit.message,
      author: commit.author,
      committed_at: new Date(commit.committed_at).toISOString(),
      // Embedded like a symbol's doc comment: a commit is found by what it says.
      doc: commit.message,
    };
    values.set(commit.sha, {
      key: commit.sha,
      type,
      name: commit.sha,
      properties,
      baseSalience: baseSalienceFor(type),
    });
  }
  return values;
}

interface EdgeByKey {
  type: string;
  source: string;
  target: string;
  extra: Record<string, unknown>;
}

/** The batch's edges by key, TOUCHED ones from its commits; one per (type, source, target). */
function edgesOf(batch: CodeIngestRequest): EdgeByKey[] {
  const edges = new Map<string, EdgeByKey>();
  const add = (edge: EdgeByKey) => edges.set(`${edge.type}\u0000${edge.source}\u0000${edge.target}`, edge);
  for (const { resolution, ...edge } of batch.edges) add({ ...edge, extra: resolution ? { resolution } : {} });
  for (const commit of batch.commits) {
    for (const file of commit.files) {
      const extra = { action: file.action, ...(file.previous_path ? { previous_path: file.previous_path } : {}) };
      add({ type: 'TOUCHED', source: commit.sha, target: file.path, extra });
    }
  }
  return [...edges.values()];
}

/**
 * The code graph (issue 15): ingest batches applied by the `code-index-<workspace>-<repo>` workflow,
 * and symbol-context over what they wrote.
 */
export function createCodeService(deps: {
  uow: UnitOfWork;
  temporal: TemporalHandle;
  credits: CreditService;
  outbox: OutboxRelay;
}) {
  const { uow, temporal, credits, outbox } = deps;

  /** One batch in one transaction: nodes upserted by key, edges by their ends, the pass's sweep when final. */
  async function applyInTransaction(
    m: EntityManager,
    input: { workspaceId: string; batch: CodeIngestRequest },
  ): Promise<CodeBatchResult> {
    const { workspaceId, batch } = input;
    const settings = (await readOntologyConfig(m)).importance;
    const values = nodeValuesOf(batch);
    const known = await knownSymbols(m, batch.repo, [...values.keys()]);
    const existing = [...values.values()].flatMap((value) => {
      const id = known.get(value.key);
      return id ? [{ ...value, id }] : [];
    });
    const updated = await updateSymbolNodes(m, existing);
    const created = await insertSymbolNodes(
      m,
      workspaceId,
      [...values.values()].filter((value) => !known.has(value.key)),
      settings,
    );
    const nodeOf = new Map([...known, ...created]);
    await recordSymbols(m, {
      workspaceId,
      repo: batch.repo,
      runId: batch.run_id,
      keys: [...values.keys()],
      nodeIds: [...values.keys()].map((key) => nodeOf.get(key) as string),
    });
    for (const type of new Set([...values.values()].map((value) => value.type))) {
      await registerType(m, workspaceId, 'node', type);
    }

    const edges = edgesOf(batch);
    const ends = await liveSymbolNodes(m, batch.repo, [
      ...new Set(edges.flatMap((edge) => [edge.source, edge.target])),
    ]);
    const resolved: EdgeValues[] = edges.flatMap((edge) => {
      const sourceNodeId = ends.get(edge.source);
      const targetNodeId = ends.get(edge.target);
      if (!sourceNodeId || !targetNodeId) return [];
      const properties = { code_repo: batch.repo, code_run: batch.run_id, ...edge.extra };
      return [{ type: edge.type, sourceNodeId, targetNodeId, properties }];
    });
    const edgesWritten = await upsertCodeEdges(m, workspaceId, resolved);
    for (const type of new Set(resolved.map((edge) => edge.type))) await registerType(m, workspaceId, 'edge', type);

    const toEmbed = [...created.values(), ...updated.filter((row) => row.reembed).map((row) => row.id)];
    if (toEmbed.length > 0) {
      await enqueueEvent(m, codeEmbeddingRequested, {
        workspaceId,
        aggregateId: toEmbed[0] as string,
        payload: { node_ids: toEmbed },
      });
    }

    let deletedSymbols = 0;
    let deletedEdges = 0;
    if (batch.final) {
      // Deletions stay inside what the pass covered (review M-8): an `--include` pass or a skipped
      // file must not delete the rest of the repository.
      const coverage = { include: batch.coverage?.include, skipped: batch.coverage?.skipped ?? [] };
      const gone = await softDeleteUnseenSymbols(m, batch.repo, batch.run_id, coverage);
      deletedSymbols = gone.length;
      deletedEdges = gone.length > 0 ? await softDeleteIncidentCodeEdges(m, gone) : 0;
      deletedEdges += await softDeleteUnseenEdges(m, batch.repo, batch.run_id, coverage);
    }
    return {
      repo: batch.repo,
      run_id: batch.run_id,
      created: created.size,
      updated: updated.length,
      edges: edgesWritten,
      unresolved_edges: edges.length - resolved.length,
      embeddings_requested: toEmbed.length,
      deleted_symbols: deletedSymbols,
      deleted_edges: deletedEdges,
    };
  }

  /** The symbol a request names: by id, else by (name, type); 400 without either, 404, or 409 when ambiguous. */
  async function resolve(m: EntityManager, request: SymbolContextRequest) {
    if (request.node_id) {
      const node = await liveNodeById(m, request.node_id);
      if (!node) throw new NotFoundError({ error: 'symbol_not_found', node_id: request.node_id });
      return node;
    }
    if (!request.name || !request.type) {
      throw new BadRequestError('Give node_id, or both name and type');
    }
    const found = await nodesByNameAndType(m, request.name, request.type, AMBIGUOUS_CANDIDATES + 1);
    const [first] = found;
    if (!first) throw new NotFoundError({ error: 'symbol_not_found', name: request.name, type: request.type });
    if (found.length > 1) {
      const candidates = found.slice(0, AMBIGUOUS_CANDIDATES);
      throw new ConflictError({
        error: 'ambiguous_symbol',
        message:
          `${found.length > AMBIGUOUS_CANDIDATES ? 'More than ' : ''}${candidates.length} live nodes of type ` +
          `${request.type} match; ask again with node_id`,
        candidate_ids: candidates.map((node) => node.id),
        candidates: candidates.map((node) => ({ id: node.id, key: node.key })),
      });
    }
    return first;
  }

  /** The symbol's context in one transaction, which also confirms the caller's charge (`confirm`). */
  const symbolContextPrepaid = (
    principal: Principal,
    request: SymbolContextRequest,
    confirm: (m: EntityManager) => Promise<void>,
  ): Promise<Omit<SymbolContextResponse, 'credit_receipt'>> =>
    uow(scopeOf(principal), async (m) => {
      const after = contextPageStarts(request.cursors);
      const node = await resolve(m, request);
      await enableIterativeIndexScan(m, request.limit);
      const found = await symbolContext(m, node, request.limit, after);
      if (!found) throw new NotFoundError({ error: 'symbol_not_found', node_id: node.id });
      const { context, next_cursors } = nextCursors(found, request.limit);
      await confirm(m);
      const { key: _key, vector: _vector, ...row } = node;
      return {
        symbol: toNodeResponse(row),
        ...context,
        next_cursors,
        recent_commits: context.recent_commits.map((commit) => ({
          ...commit,
          action: commit.action as SymbolContextResponse['recent_commits'][number]['action'],
        })),
      };
    });

  return {
    /**
     * POST /v1/ontology/symbol-context: charged first (1 credit, 402 when short); resolving the
     * symbol and reading its lists happen in one transaction that also confirms the charge, so a
     * 400, 404 or 409 refunds it.
     */
    symbolContext: (principal: Principal, request: SymbolContextRequest): Promise<SymbolContextResponse> =>
      credits.chargeFor(principal, 'ontology.symbol_context', async ({ receipt, confirm }) => ({
        ...(await symbolContextPrepaid(principal, request, confirm)),
        credit_receipt: receipt,
      })),

    /** The same answer without its receipt, for a caller that charged already (`ontology.symbol_context`). */
    symbolContextPrepaid,

    /**
     * POST /v1/code/ingest: runs the batch as `code-index-<workspace>-<repo>` and answers with its
     * result once applied (504 after LIMITS.code.applyWaitMs, the run goes on); 409 while another
     * batch of the repository is being applied.
     */
    async ingest(principal: Principal, batch: CodeIngestRequest): Promise<CodeIngestResponse> {
      const batchId = await uow(scopeOf(principal), (m) => insertCodeBatch(m, principal.workspaceId, batch));
      const input: CodeIndexInput = {
        workspaceId: principal.workspaceId,
        batchId,
        repo: batch.repo,
        counts: {
          symbols: batch.symbols.length,
          edges: batch.edges.length,
          commits: batch.commits.length,
          final: batch.final,
        },
      };
      const workflowId = codeIndexWorkflowId(principal.workspaceId, batch.repo);
      const handle = await temporal.workflows.startIfIdle(codeIndexWorkflow, input);
      if (!handle) {
        await uow(scopeOf(principal), (m) => deleteCodeBatch(m, batchId));
        throw new ConflictError({
          error: 'index_batch_running',
          message: `A batch of ${batch.repo} is being applied (${workflowId}); send this one when it is done`,
        });
      }
      const result = await temporal.workflows.resultWithin(
        handle,
        LIMITS.code.applyWaitMs,
        () => new DeadlineExceededError(`The batch is still being applied by ${workflowId}`),
      );
      return { workflow_id: workflowId, ...result };
    },

    /** The workflow's step: applies a batch (idempotent) and hands new or changed nodes to the embedder. */
    async applyBatch(input: CodeIndexInput): Promise<CodeBatchResult> {
      const result = await uow({ workspaceId: input.workspaceId }, async (m) => {
        // Only a batch this workspace stored through the API; applied once, its result answers a retry.
        const stored = await lockCodeBatch(m, input.batchId);
        if (!stored) throw new NotFoundError('Code batch not found');
        if (stored.result) return stored.result;
        const applied = await applyInTransaction(m, { workspaceId: input.workspaceId, batch: stored.batch! });
        await markCodeBatchApplied(m, input.batchId, applied);
        return applied;
      });
      if (result.embeddings_requested > 0) outbox.kick(input.workspaceId);
      return result;
    },
  };
}

export type CodeService = ReturnType<typeof createCodeService>;
