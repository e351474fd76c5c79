import type { EntityManager } from 'typeorm';
import { createEdgeInTransaction, createNodeInTransaction, touchNodes } from '../graph/node-writes';
import type { EdgeResponse, NodeResponse } from '../graph/schemas';
import { toEdgeResponse, toNodeResponse } from '../graph/schemas';
import { readOntologyConfig } from '../ontology-config/service';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { GroundedAnswer, Intent, PromptModel, RefinedGraph } from './model/contract';
import {
  claimPromptWritesUndo,
  edgesInOrder,
  findLiveEdge,
  findLiveNodeByName,
  findPromptWrites,
  insertPromptWrites,
  nodesInOrder,
  recordPromptRun,
  softDeleteEdges,
  softDeleteNodes,
  takeBackReferences,
} from './repository';
import type { Retrieval } from './retrieval';
import type { SealedText, Sealer } from './sealed';
import { auditSummary } from './summary';

export interface PersistedGraph {
  nodes: NodeResponse[];
  edges: EdgeResponse[];
  nodes_created: number;
  edges_created: number;
}

export interface AuditInput {
  workspaceId: string;
  correlationId: string;
  promptKind: string;
  sourceHash: string;
  intent: Intent;
  startedAtMs: number;
}

/** Same type and the same name up to case and spacing: a reference, not a duplicate. */
export const normalizedName = (name: string) => name.normalize('NFKC').trim().replace(/\s+/g, ' ').toLowerCase();

async function loadWritten(m: EntityManager, nodeIds: string[], edgeIds: string[]) {
  const nodes = await nodesInOrder(m, nodeIds);
  const edges = await edgesInOrder(m, edgeIds);
  return { nodes: nodes.map(toNodeResponse), edges: edges.map(toEdgeResponse) };
}

/**
 * The prompt pipeline's domain steps. Each is safe to repeat: Temporal runs activities at least
 * once, so writes are keyed by the prompt's correlation id.
 */
export function createPromptService(deps: {
  uow: UnitOfWork;
  outbox: OutboxRelay;
  model: PromptModel;
  sealer: Sealer;
  retrieval: Retrieval;
}) {
  const { uow, outbox, model, sealer, retrieval } = deps;

  return {
    classify: (prompt: SealedText) => model.classify(sealer.open(prompt)),

    refine: (prompt: SealedText, promptKind: string) => model.refine(sealer.open(prompt), promptKind),

    /**
     * Persists the refined graph in one transaction: an existing live node of the same type and
     * normalised name is referenced instead of duplicated; edges reference both ends. Exactly once
     * per correlation id: a repeat returns what the first run wrote.
     */
    async persist(input: {
      workspaceId: string;
      correlationId: string;
      refined: RefinedGraph;
    }): Promise<PersistedGraph> {
      const { workspaceId, correlationId, refined } = input;
      const result = await uow({ workspaceId }, async (m) => {
        const earlier = await findPromptWrites(m, workspaceId, correlationId);
        if (earlier) {
          const written = await loadWritten(m, earlier.nodeIds, earlier.edgeIds);
          const createdBefore = earlier.nodeIds.filter((id) => !(id in earlier.referenceDeltas));
          return {
            ...written,
            nodes_created: createdBefore.length,
            edges_created: earlier.edgeIds.length,
            fresh: false,
          };
        }
        const { importance } = await readOntologyConfig(m);
        const options = { importance };
        const idByRef = new Map<string, string>();
        // One node per (type, normalised name) within the prompt too: the model may name it twice.
        const idByKey = new Map<string, string>();
        const created: string[] = [];
        const referenced: string[] = [];
        for (const node of refined.nodes) {
          const key = `${node.type}\u0000${normalizedName(node.name)}`;
          let id = idByKey.get(key);
          if (!id) {
            const existing = await findLiveNodeByName(m, node.type, normalizedName(node.name));
            if (existing) {
              id = existing.id;
              referenced.push(id);
            } else {
              const row = await createNodeInTransaction(
                m,
                workspaceId,
                { type: node.type, name: node.name, properties: node.properties },
                options,
              );
              id = row.id;
              created.push(id);
            }
            idByKey.set(key, id);
          }
          idByRef.set(node.ref, id);
        }
        await touchNodes(m, referenced, options);
        const edgeIds: string[] = [];
        const deltas: Record<string, number> = Object.fromEntries(referenced.map((id) => [id, 1]));
        for (const edge of refined.edges) {
          const source = idByRef.get(edge.source_ref);
          const target = idByRef.get(edge.target_ref);
          if (!source || !target) continue; // the model named a ref it did not define: skip the edge
          // A fact already in the graph is a reference of its ends, not a second edge.
          const known = await findLiveEdge(m, edge.type, source, target);
          if (known) {
            await touchNodes(m, [source, target], options);
            for (const end of [source, target]) if (!created.includes(end)) deltas[end] = (deltas[end] ?? 0) + 1;
            continue;
          }
          const row = await createEdgeInTransaction(
            m,
            workspaceId,
            {
              type: edge.type,
              source_node_id: source,
              target_node_id: target,
              reasoning: edge.reasoning,
              evidence: edge.evidence,
            },
            options,
          );
          edgeIds.push(row.id);
          for (const end of [source, target]) if (!created.includes(end)) deltas[end] = (deltas[end] ?? 0) + 1;
        }
        await insertPromptWrites(m, {
          workspaceId,
          correlationId,
          nodeIds: [...created, ...referenced],
          edgeIds,
          referenceDeltas: deltas,
        });
        const written = await loadWritten(m, [...created, ...referenced], edgeIds);
        return { ...written, nodes_created: created.length, edges_created: edgeIds.length, fresh: true };
      });
      if (result.fresh) outbox.kick(workspaceId);
      const { fresh: _fresh, ...persisted } = result;
      return persisted;
    },

    /**
     * The compensation of `persist`: every node and edge this prompt created is soft-deleted (with
     * the incident edges of its nodes) and the references it added to older nodes are taken back.
     * Idempotent, and a no-op when nothing was persisted.
     */
    undo: (input: { workspaceId: string; correlationId: string }) =>
      uow({ workspaceId: input.workspaceId }, async (m) => {
        const written = await claimPromptWritesUndo(m, input.correlationId);
        if (!written) return { undone: false };
        const referencedBefore = Object.keys(written.reference_deltas);
        const created = written.node_ids.filter((id) => !referencedBefore.includes(id));
        await softDeleteEdges(m, written.edge_ids, created);
        await softDeleteNodes(m, created);
        await takeBackReferences(m, written.reference_deltas);
        return { undone: true };
      }),

    /** Hybrid retrieval, then a grounded answer whose citations are node ids of this context. */
    async answer(input: { workspaceId: string; prompt: SealedText }): Promise<GroundedAnswer> {
      const question = sealer.open(input.prompt);
      const context = await retrieval.context(input.workspaceId, question, await retrieval.embed(question));
      const answer = await model.answer(question, context);
      const known = new Set(context.nodes.map((node) => node.id));
      return { answer: answer.answer, citations: [...new Set(answer.citations.filter((id) => known.has(id)))] };
    },

    /**
     * The success audit row, and the references of cited nodes, in one transaction; a repeat finds
     * the row and changes nothing.
     */
    complete: (
      input: AuditInput & {
        persisted: PersistedGraph;
        answer: GroundedAnswer | null;
        creditsUsed: number;
        ledgerId: string;
      },
    ) =>
      uow({ workspaceId: input.workspaceId }, async (m) => {
        const inserted = await insertAudit(m, input, {
          status: 'ok',
          nodeCount: input.persisted.nodes_created,
          edgeCount: input.persisted.edges_created,
          creditsUsed: input.creditsUsed,
          ledgerId: input.ledgerId,
          summary: auditSummary({
            intent: input.intent,
            nodesCreated: input.persisted.nodes_created,
            edgesCreated: input.persisted.edges_created,
            answer: input.answer?.answer,
          }),
        });
        if (inserted && input.answer) await touchNodes(m, input.answer.citations);
        return { recorded: inserted };
      }),

    /** The failure audit row: counts 0, credits 0 after the refund, the error's class name. */
    fail: (input: AuditInput & { errorCode: string; ledgerId: string | null }) =>
      uow({ workspaceId: input.workspaceId }, async (m) => ({
        recorded: await insertAudit(m, input, {
          status: 'error',
          nodeCount: 0,
          edgeCount: 0,
          creditsUsed: 0,
          ledgerId: input.ledgerId,
          errorCode: input.errorCode,
          summary: auditSummary({ intent: input.intent, nodesCreated: 0, edgesCreated: 0, error: input.errorCode }),
        }),
      })),

    /** The query pipeline's parts, for the stream endpoint, which reports each step as it runs. */
    retrieval,
    model,
  };
}

async function insertAudit(
  m: EntityManager,
  input: AuditInput,
  row: {
    status: 'ok' | 'error';
    nodeCount: number;
    edgeCount: number;
    creditsUsed: number;
    ledgerId: string | null;
    summary: string;
    errorCode?: string;
  },
): Promise<boolean> {
  return recordPromptRun(m, {
    workspaceId: input.workspaceId,
    correlationId: input.correlationId,
    promptKind: input.promptKind,
    sourceHash: input.sourceHash,
    intent: input.intent,
    status: row.status,
    nodeCount: row.nodeCount,
    edgeCount: row.edgeCount,
    creditsUsed: row.creditsUsed,
    ledgerId: row.ledgerId,
    summary: row.summary,
    errorCode: row.errorCode ?? null,
    durationMs: Math.max(0, Date.now() - input.startedAtMs),
  });
}

export type PromptService = ReturnType<typeof createPromptService>;
