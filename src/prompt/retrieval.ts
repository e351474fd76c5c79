import type { NodeRow } from '../graph/repository';
import { NODE_COLUMNS } from '../graph/repository';
import { readOntologyConfig } from '../ontology-config/service';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { EmbeddingProvider } from '../platform/llm/embedding-provider';
import { enableIterativeIndexScan, vectorCandidates } from '../search/repository';
import { reciprocalRankFusion } from '../search/scoring';
import type { ContextEdge, ContextNode } from './model/contract';

/** How many nodes a grounded answer may draw on. */
export const CONTEXT_SIZE = 10;

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
 * The embedding is computed first, outside any transaction.
 */
export function createRetrieval(deps: { uow: UnitOfWork; embeddings: EmbeddingProvider }) {
  return {
    embed: async (question: string) => (await deps.embeddings.embed([question]))[0]!,

    context: (workspaceId: string, question: string, embedding: number[]): Promise<GraphContext> =>
      deps.uow({ workspaceId }, async (m) => {
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
        const named: (NodeRow & { matched: number })[] =
          words.length === 0
            ? []
            : await m.query(
                `SELECT ${NODE_COLUMNS}, (SELECT count(*) FROM unnest($2::text[]) w WHERE n.name ILIKE '%' || w || '%')::int AS matched
           FROM nodes n
           WHERE n.workspace_id = $1 AND NOT n.is_deleted AND n.name ILIKE ANY (SELECT '%' || w || '%' FROM unnest($2::text[]) w)
           ORDER BY matched DESC, n.importance_score DESC, n.id
           LIMIT $3`,
                [workspaceId, words, CONTEXT_SIZE],
              );
        const rows = new Map<string, NodeRow>([...named, ...semantic].map((row) => [row.id, row]));
        const fused = [...reciprocalRankFusion([semantic.map((row) => row.id), named.map((row) => row.id)]).entries()]
          .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
          .slice(0, CONTEXT_SIZE);
        const nodes: ContextNode[] = fused.map(([id, score]) => {
          const row = rows.get(id)!;
          return { id, type: row.type, name: row.name, properties: row.properties, score };
        });
        const edges: ContextEdge[] = await m.query(
          `SELECT type, source_node_id, target_node_id FROM edges
           WHERE NOT is_deleted AND source_node_id = ANY($1::uuid[]) AND target_node_id = ANY($1::uuid[]) LIMIT 50`,
          [nodes.map((node) => node.id)],
        );
        return { nodes, edges };
      }),
  };
}

export type Retrieval = ReturnType<typeof createRetrieval>;
