// About 400 lines on purpose: one audience (the prompt workflow's activities), and the saga's steps
// sit beside their compensation (`persist` beside `undoWrites` and the undo journal they share).
import type { EntityManager } from 'typeorm';
import { findChangeSetOfPrompt, liveNodesWithProperties, withdrawChangeSetOfPrompt } from '../change-sets/repository';
import type { ChangeSetOperations } from '../change-sets/schemas';
import { sameValue, stageChangeSet } from '../change-sets/staging';
import type { CreditReceipt } from '../credits/repository';
import { refundCredits, reserveCredits } from '../credits/repository';
import { reopenEdgesClosedBy, toEdgeResponse, toNodeResponse } from '../graph/repository';
import type { EdgeResponse, NodeResponse } from '../graph/schemas';
import { createNodeInTransaction, enqueueNodeCreated, touchNodes, writeExtractedEdge } from '../graph/writes';
import { readOntologyConfig } from '../ontology-config/service';
import type { SealBinding, SealedText, Sealer } from '../platform/crypto/sealer';
import type { Scope, UnitOfWork } from '../platform/db/unit-of-work';
import { ConflictError, InternalError, NotFoundError } from '../platform/errors';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { FailureDetails } from '../platform/temporal/failures';
import type { PromptRun } from './entities';
import type { GroundedAnswer, Intent, PromptModel, RefinedGraph } from './model/contract';
import { PROMPT_CREDIT_KIND } from './model/contract';
import type { PromptRunClaim } from './repository';
import {
  claimPromptRun,
  claimPromptWritesUndo,
  edgesInOrder,
  findLiveNodeByName,
  findPromptRun,
  findPromptWrites,
  insertPromptWrites,
  linkReservation,
  liveNodes,
  lockReservation,
  nodesInOrder,
  recordPromptRun,
  referenceCounts,
  softDeleteEdges,
  softDeleteUntouchedNodes,
  takeBackReferences,
  tenantOfWorkspace,
} from './repository';
import type { Retrieval } from './retrieval';
import { auditSummary } from './summary';
import type { PromptWorkflowResult } from './workflow';

export interface PersistedGraph {
  nodes: NodeResponse[];
  edges: EdgeResponse[];
  nodes_created: number;
  edges_created: number;
  /** A staged prompt's change-set: nothing was written (issue 31 part 4). */
  change_set_id?: string;
}

/** What every audit row says of its run. */
export interface AuditInput {
  workspaceId: string;
  correlationId: string;
  promptKind: string;
  sourceHash: string;
  /** SHA-256 of the request (`requestHash` in summary.ts); null for a run nobody claimed. */
  requestHash: string | null;
  intent: Intent;
  startedAtMs: number;
}

export interface CompletionInput extends AuditInput {
  ledgerId: string;
  creditsUsed: number;
  nodesCreated: number;
  edgesCreated: number;
  answer: GroundedAnswer | null;
}

export interface FailureInput extends AuditInput {
  /** The reservation, or null when the run failed before reserving (or was refused). */
  ledgerId: string | null;
  failure: FailureDetails;
}

/** The sender of a prompt, as the graph's version rows record it. */
export interface PromptActor {
  userId: string;
  credentialKind: string;
  credentialId?: string;
}

/** A prompt's unit of work: its writes' versions name the prompt and, when known, its sender. */
const promptScope = (workspaceId: string, correlationId: string, actor?: PromptActor): Scope => ({
  workspaceId,
  ...(actor ? { userId: actor.userId } : {}),
  actor: { promptId: correlationId, credentialKind: actor?.credentialKind, credentialId: actor?.credentialId },
});

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
    classify: (prompt: SealedText, binding: SealBinding) => model.classify(sealer.open(prompt, binding)),

    refine: (prompt: SealedText, promptKind: string, binding: SealBinding) =>
      model.refine(sealer.open(prompt, binding), promptKind),

    /**
     * Persists the refined graph in one transaction: an existing live node of the same type and
     * normalised name is referenced instead of duplicated; edges reference both ends. Exactly once
     * per correlation id: a repeat returns what the first run wrote.
     */
    async persist(input: {
      workspaceId: string;
      correlationId: string;
      refined: RefinedGraph;
      /** Who sent the prompt, for the graph's version rows (absent in workflows started before issue 31). */
      actor?: PromptActor;
      /** Stage a change-set instead of writing (issue 31 part 4); exactly once per correlation id too. */
      stage?: boolean;
    }): Promise<PersistedGraph> {
      const { workspaceId, correlationId, refined } = input;
      const { actor } = input;
      if (input.stage && actor) {
        return uow(promptScope(workspaceId, correlationId, actor), async (m) => {
          const earlier = await findChangeSetOfPrompt(m, correlationId);
          const staged =
            earlier?.id ??
            (
              await stageChangeSet(
                m,
                {
                  workspaceId,
                  userId: actor.userId,
                  credential: { kind: actor.credentialKind, id: actor.credentialId },
                },
                { kind: 'prompt', promptId: correlationId },
                await proposeRefined(m, refined),
              )
            ).change_set_id;
          return { nodes: [], edges: [], nodes_created: 0, edges_created: 0, change_set_id: staged };
        });
      }
      return uow(promptScope(workspaceId, correlationId, input.actor), async (m) => {
        const earlier = await findPromptWrites(m, workspaceId, correlationId);
        if (earlier) {
          const written = await loadWritten(m, earlier.nodeIds, earlier.edgeIds);
          const createdBefore = earlier.nodeIds.filter((id) => !(id in earlier.referenceDeltas));
          return {
            ...written,
            nodes_created: createdBefore.length,
            edges_created: earlier.edgeIds.length,
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
              // node.created waits for the prompt to complete (`complete`): an undone prompt's nodes
              // are never embedded or resolved, so a refunded prompt pays for nothing.
              const row = await createNodeInTransaction(
                m,
                workspaceId,
                { type: node.type, name: node.name, properties: node.properties },
                { ...options, emitCreated: false },
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
          // A fact already in the graph is a reference of its ends, not a second edge; a new employer
          // closes the old one's validity rather than deleting it (issue 31).
          const row = await writeExtractedEdge(
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
          if (row) edgeIds.push(row.id);
          for (const end of [source, target]) if (!created.includes(end)) deltas[end] = (deltas[end] ?? 0) + 1;
        }
        await insertPromptWrites(m, {
          workspaceId,
          correlationId,
          nodeIds: [...created, ...referenced],
          edgeIds,
          referenceDeltas: deltas,
          createdReferences: await referenceCounts(m, created),
        });
        const written = await loadWritten(m, [...created, ...referenced], edgeIds);
        return { ...written, nodes_created: created.length, edges_created: edgeIds.length };
      });
    },

    /**
     * The compensation of `persist`, in its own transaction. Idempotent, and a no-op when nothing
     * was persisted.
     */
    undo: (input: { workspaceId: string; correlationId: string }) =>
      uow(promptScope(input.workspaceId, input.correlationId), async (m) => ({
        undone: await undoWrites(m, input.correlationId),
      })),

    /** Hybrid retrieval, then a grounded answer whose citations are node ids of this context. */
    async answer(input: SealBinding & { prompt: SealedText }): Promise<GroundedAnswer> {
      const question = sealer.open(input.prompt, input);
      const context = await retrieval.context(input.workspaceId, question, await retrieval.embed(question));
      return groundedAnswer(await model.answer(question, context), context.nodes);
    },

    /**
     * Claims the correlation id for this request before anything runs; when it is taken, the run
     * that holds it (a retry of the same request, or another request under a reused id).
     */
    claim: (claim: PromptRunClaim) =>
      uow(
        { workspaceId: claim.workspaceId },
        async (m): Promise<{ claimed: true } | { claimed: false; run: PromptRun }> => {
          if (await claimPromptRun(m, claim)) return { claimed: true };
          const run = await findPromptRun(m, claim.workspaceId, claim.correlationId);
          if (!run) throw new InternalError('The prompt run holding this correlation id vanished');
          return { claimed: false, run };
        },
      ),

    /**
     * Reserves the intent's cost, keyed by `idempotencyKey` so a retried step charges once. The
     * tenant that pays is the workspace's own, read here: never one named by the caller.
     */
    reserve: (input: { workspaceId: string; correlationId: string; intent: Intent; idempotencyKey: string }) =>
      uow({ workspaceId: input.workspaceId }, async (m): Promise<CreditReceipt> => {
        const tenantId = await tenantOfWorkspace(m, input.workspaceId);
        if (!tenantId) throw new NotFoundError('Workspace not found');
        const receipt = await reserveCredits(m, {
          tenantId,
          workspaceId: input.workspaceId,
          kind: PROMPT_CREDIT_KIND[input.intent],
          idempotencyKey: input.idempotencyKey,
        });
        await linkReservation(m, input.correlationId, receipt.ledger_id);
        return receipt;
      }),

    refund: (input: { workspaceId: string; ledgerId: string }) =>
      uow({ workspaceId: input.workspaceId }, (m) => refundCredits(m, { ledgerId: input.ledgerId })),

    /**
     * What a completed run answered, rebuilt from its audit row and the graph, for a replay after
     * Temporal's retention has dropped the execution's own result: the same nodes, edges, answer
     * and receipt, the nodes and edges as they are now.
     */
    replay: (run: PromptRun): Promise<PromptWorkflowResult> =>
      uow({ workspaceId: run.workspaceId }, async (m) => {
        const writes = await findPromptWrites(m, run.workspaceId, run.correlationId);
        if (!run.linkedCreditLedgerId) throw new InternalError('This prompt run has no reservation to show');
        const written = writes ? await loadWritten(m, writes.nodeIds, writes.edgeIds) : { nodes: [], edges: [] };
        const staged = await findChangeSetOfPrompt(m, run.correlationId);
        return {
          ...(staged ? { change_set_id: staged.id } : {}),
          correlation_id: run.correlationId,
          intent: run.intent,
          ...written,
          nodes_created: run.nodeCount,
          edges_created: run.edgeCount,
          answer: run.answer,
          citations: run.citations ?? [],
          credit_receipt: {
            ledger_id: run.linkedCreditLedgerId,
            kind: PROMPT_CREDIT_KIND[run.intent],
            amount: run.creditsUsed,
          },
        };
      }),

    /**
     * Settles a run as done: the ok audit row (with the answer a replay shows), the references of the
     * cited nodes, and `node.created` for the nodes it created, in one transaction under the
     * reservation's lock. A repeat finds the row and changes nothing; a run the reconcile pass
     * already settled as abandoned (undone and refunded) stays that way, and this throws.
     */
    async complete(input: CompletionInput): Promise<{ recorded: boolean }> {
      const { recorded, emitted } = await uow({ workspaceId: input.workspaceId }, async (m) => {
        const reservation = await lockReservation(m, input.ledgerId);
        if (!reservation) throw new NotFoundError('Credit reservation not found');
        if (reservation.refunded && !reservation.completed) {
          throw new ConflictError(
            'This prompt was settled as abandoned: its writes were undone and its credits refunded',
          );
        }
        const written = await recordPromptRun(m, {
          ...auditRow(input),
          status: 'ok',
          nodeCount: input.nodesCreated,
          edgeCount: input.edgesCreated,
          creditsUsed: input.creditsUsed,
          ledgerId: input.ledgerId,
          errorCode: null,
          summary: auditSummary({
            intent: input.intent,
            nodesCreated: input.nodesCreated,
            edgesCreated: input.edgesCreated,
            answer: input.answer?.answer,
          }),
          answer: input.answer?.answer ?? null,
          citations: input.answer?.citations ?? null,
          failure: null,
        });
        if (!written) return { recorded: false, emitted: 0 };
        if (input.answer) await touchNodes(m, input.answer.citations);
        return { recorded: true, emitted: await emitNodesCreated(m, input.workspaceId, input.correlationId) };
      });
      if (emitted > 0) outbox.kick(input.workspaceId);
      return { recorded };
    },

    /** The failure audit row: counts 0, credits 0 after the refund, the error's class name. */
    fail: (input: FailureInput) =>
      uow({ workspaceId: input.workspaceId }, async (m) => ({ recorded: await recordFailure(m, input) })),

    /**
     * Does what a run's compensation would have done, in one transaction under the reservation's
     * lock: undo its writes, refund, audit the failure. For runs that ended without compensating
     * (a terminated workflow, a stream whose process died). Does nothing to a run that completed
     * meanwhile; idempotent otherwise.
     */
    abandon: (input: FailureInput) =>
      uow({ workspaceId: input.workspaceId }, async (m) => {
        if (input.ledgerId) {
          const reservation = await lockReservation(m, input.ledgerId);
          if (!reservation || reservation.completed) return { settled: false };
        }
        const undone = await undoWrites(m, input.correlationId);
        const refunded = input.ledgerId ? (await refundCredits(m, { ledgerId: input.ledgerId })).refunded : false;
        const recorded = await recordFailure(m, input);
        return { settled: undone || refunded || recorded };
      }),

    /** The query pipeline's parts, for the stream endpoint, which reports each step as it runs. */
    retrieval,
    model,
  };
}

/** Keeps only citations of the retrieved context, once each. */
export function groundedAnswer(raw: GroundedAnswer, context: readonly { id: string }[]): GroundedAnswer {
  const known = new Set(context.map((node) => node.id));
  return { answer: raw.answer, citations: [...new Set(raw.citations.filter((id) => known.has(id)))] };
}

const auditRow = (input: AuditInput) => ({
  workspaceId: input.workspaceId,
  correlationId: input.correlationId,
  promptKind: input.promptKind,
  sourceHash: input.sourceHash,
  requestHash: input.requestHash,
  intent: input.intent,
  durationMs: Math.max(0, Date.now() - input.startedAtMs),
});

const recordFailure = (m: EntityManager, input: FailureInput) =>
  recordPromptRun(m, {
    ...auditRow(input),
    status: 'error',
    nodeCount: 0,
    edgeCount: 0,
    creditsUsed: 0,
    ledgerId: input.ledgerId,
    errorCode: input.failure.errorClass,
    summary: auditSummary({ intent: input.intent, nodesCreated: 0, edgesCreated: 0, error: input.failure.errorClass }),
    answer: null,
    citations: null,
    failure: input.failure,
  });

/**
 * The compensation of `persist`, in the caller's transaction: only what this prompt wrote. Its own
 * edges go; a node it created goes unless someone else has referenced, connected or edited it
 * since (then it stays, less the references the prompt's own edges gave it); the references it
 * added to older nodes are taken back. False when there was nothing (left) to undo.
 */
async function undoWrites(m: EntityManager, correlationId: string): Promise<boolean> {
  // A staged prompt wrote nothing: its pending change-set is withdrawn instead.
  if (await withdrawChangeSetOfPrompt(m, correlationId)) return true;
  const written = await claimPromptWritesUndo(m, correlationId);
  if (!written) return false;
  const created = written.node_ids.filter((id) => !(id in written.reference_deltas));
  await softDeleteEdges(m, written.edge_ids);
  // The facts its contradictions closed hold again.
  await reopenEdgesClosedBy(m, correlationId);
  // Rows written before created_references existed have no count: then only edges and edits count.
  const leftBy = Object.fromEntries(created.map((id) => [id, written.created_references[id] ?? null]));
  const deleted = new Set(await softDeleteUntouchedNodes(m, leftBy, correlationId));
  const takeBack = { ...written.reference_deltas };
  for (const id of created) if (!deleted.has(id)) takeBack[id] = written.created_references[id] ?? 0;
  await takeBackReferences(m, takeBack);
  return true;
}

/**
 * What `persist` would write, as a change-set's operations: one node per type and normalised name,
 * an existing live node referenced (with a property change for each value the prompt gives that
 * differs from the node's, `before` being the node's value now), edges between refs.
 */
async function proposeRefined(m: EntityManager, refined: RefinedGraph): Promise<ChangeSetOperations> {
  const nodes: ChangeSetOperations['nodes'] = [];
  const propertyChanges: ChangeSetOperations['property_changes'] = [];
  const refOf = new Map<string, string>();
  const refByKey = new Map<string, string>();
  for (const node of refined.nodes) {
    const key = `${node.type}\u0000${normalizedName(node.name)}`;
    const known = refByKey.get(key);
    if (known) {
      refOf.set(node.ref, known);
      continue;
    }
    refByKey.set(key, node.ref);
    refOf.set(node.ref, node.ref);
    const existing = await findLiveNodeByName(m, node.type, normalizedName(node.name));
    if (!existing) {
      nodes.push({ ref: node.ref, node_id: null, type: node.type, name: node.name, properties: node.properties });
      continue;
    }
    nodes.push({ ref: node.ref, node_id: existing.id, type: node.type, name: node.name, properties: {} });
    const [current] = await liveNodesWithProperties(m, [existing.id], false);
    for (const [name, after] of Object.entries(node.properties)) {
      const before = current?.properties[name] ?? null;
      if (!sameValue(before, after)) {
        propertyChanges.push({ node_ref: node.ref, node_id: existing.id, key: name, before, after });
      }
    }
  }
  const edges = refined.edges.flatMap((edge) => {
    const source = refOf.get(edge.source_ref);
    const target = refOf.get(edge.target_ref);
    if (!source || !target) return []; // the model named a ref it did not define, as persist skips it
    return [
      { type: edge.type, source_ref: source, target_ref: target, reasoning: edge.reasoning, evidence: edge.evidence },
    ];
  });
  return { nodes, edges, property_changes: propertyChanges };
}

/** `node.created` for the live nodes the prompt created; how many were emitted. */
async function emitNodesCreated(m: EntityManager, workspaceId: string, correlationId: string): Promise<number> {
  const writes = await findPromptWrites(m, workspaceId, correlationId);
  if (!writes || writes.undoneAt) return 0;
  const nodes = await liveNodes(
    m,
    writes.nodeIds.filter((id) => !(id in writes.referenceDeltas)),
  );
  for (const node of nodes) await enqueueNodeCreated(m, workspaceId, node);
  return nodes.length;
}

export type PromptService = ReturnType<typeof createPromptService>;
