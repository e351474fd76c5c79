import { isGlobalQuestion } from '../communities/global-question';
import { listCommunities } from '../communities/repository';
import type { NodeRow } from '../graph/repository';
import { readSubgraph } from '../graph/traversal-repository';
import { readOntologyConfig } from '../ontology-config/service';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { InternalError } from '../platform/errors';
import type { EmbeddingProvider } from '../platform/llm/embedding/contract';
import { enableIterativeIndexScan, vectorCandidates } from '../search/repository';
import { reciprocalRankFusion } from '../search/scoring';
import type { ContextEdge, ContextNode } from './model/contract';
import { nodesNamedLike } from './repository';

/** How many nodes a grounded answer may draw on, and how many edges among them. */
export const CONTEXT_SIZE = 10;
const CONTEXT_EDGES = 50;
/** How many nodes one edge away from the retrieved ones join the context (what the answer may state of them). */
const CONTEXT_NEIGHBOURS = 20;

const STOPWORDS = new Set([
  'who',
  'whom',
  'what',
  'which',
  'when',
  'where',
  'why',
  'how',
  'the',
  'and',
  'are',
  'was',
  'were',
  'does',
  'did',
  'has',
  'have',
  'about',
  'with',
  'from',
  'for',
  'tell',
  'show',
  'list',
  'that',
  'this',
  'these',
  'those',
  'there',
  'their',
  'work',
  'works',
]);

/** The words of a question worth matching against node names. */
export function questionWords(question: string): string[] {
  const words = question.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? [];
  return [...new Set(words.filter((word) => !STOPWORDS.has(word)))].slice(0, 12);
}

export interface GraphContext {
  nodes: ContextNode[];
  edges: ContextEdge[];
}

/**
 * Hybrid retrieval for answers: the question's nearest embedded nodes (HNSW, the workspace's
 * similarity threshold) fused by reciprocal rank with the nodes whose names contain its words,
 * which also finds nodes written a moment ago and not yet embedded (a `both` prompt's own facts).
 * Then the nodes one edge away and the edges among all of them, as the one-hop neighbourhood
 * (graph_neighborhood) holds them, so an answer can say what the graph knows of a node (issue 40).
 * The embedding is computed first, outside any transaction.
 */
export function createRetrieval(deps: { uow: UnitOfWork; embeddings: EmbeddingProvider }) {
  return {
    async embed(question: string): Promise<number[]> {
      const [embedding] = await deps.embeddings.embed([question]);
      if (!embedding) throw new InternalError('The embedding provider returned no vector');
      return embedding;
    },

    context: (workspaceId: string, question: string, embedding: number[]): Promise<GraphContext> =>
      deps.uow({ workspaceId }, async (m) => {
        // A global question ("what are the main groups…") is answered from the community nodes,
        // most important first, each with its summary; without communities, retrieval as usual.
        if (isGlobalQuestion(question)) {
          const communities = await listCommunities(m, workspaceId, CONTEXT_SIZE);
          if (communities.length > 0) {
            return {
              nodes: communities.map((row, rank) => ({
                id: row.id,
                type: 'community',
                name: row.name,
                properties: row.properties,
                score: 1 - rank / communities.length,
              })),
              edges: [],
            };
          }
        }
        const { search } = await readOntologyConfig(m);
        await enableIterativeIndexScan(m, CONTEXT_SIZE);
        const semantic = await vectorCandidates(m, {
          workspaceId,
          embedding,
          topK: CONTEXT_SIZE,
          types: [],
          minSimilarity: search.min_similarity_threshold,
        });
        const words = questionWords(question);
        const named = words.length === 0 ? [] : await nodesNamedLike(m, workspaceId, words, CONTEXT_SIZE);
        const rows = new Map<string, NodeRow>([...named, ...semantic].map((row) => [row.id, row]));
        const fused = [...reciprocalRankFusion([semantic.map((row) => row.id), named.map((row) => row.id)]).entries()]
          .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
          .slice(0, CONTEXT_SIZE);
        const nodes: ContextNode[] = fused.flatMap(([id, score]) => {
          const row = rows.get(id);
          return row ? [{ id, type: row.type, name: row.name, properties: row.properties, score }] : [];
        });
        if (nodes.length === 0) return { nodes, edges: [] };
        const around = await readSubgraph(
          m,
          nodes.map((node) => node.id),
          1,
          nodes.length + CONTEXT_NEIGHBOURS,
          CONTEXT_EDGES,
        );
        const retrieved = new Set(nodes.map((node) => node.id));
        const neighbours: ContextNode[] = around.nodes
          .filter((node) => !retrieved.has(node.id))
          .map((node) => ({
            id: node.id,
            type: node.type,
            name: node.name,
            properties: {},
            score: 0,
            neighbour: true,
          }));
        return { nodes: [...nodes, ...neighbours], edges: around.edges.slice(0, CONTEXT_EDGES) };
      }),
  };
}

export type Retrieval = ReturnType<typeof createRetrieval>;
