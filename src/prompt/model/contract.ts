import { z } from 'zod';

export const INTENTS = ['update', 'query', 'both'] as const;
export type Intent = (typeof INTENTS)[number];

/** What each intent costs is the ledger's business (src/rules/costs.ts); this names the kind. */
export const PROMPT_CREDIT_KIND = {
  update: 'ontology.prompt.update',
  query: 'ontology.prompt.query',
  both: 'ontology.prompt.both',
} as const satisfies Record<Intent, string>;

/** The bounds of one prompt's extraction, whichever model refines it. */
export const REFINED_GRAPH_LIMITS = { nodes: 200, edges: 500, nameChars: 500, typeChars: 80, textChars: 1000 } as const;

/** What the refiner extracts from a prompt: nodes, and edges between them by local reference. */
export const RefinedGraph = z.object({
  nodes: z
    .array(
      z.object({
        ref: z.string().min(1).max(40).describe('A local reference that edges use, e.g. "n1".'),
        type: z
          .string()
          .min(1)
          .max(REFINED_GRAPH_LIMITS.typeChars)
          .regex(/^[a-z_][a-z0-9_.:-]*$/),
        name: z.string().trim().min(1).max(REFINED_GRAPH_LIMITS.nameChars),
        properties: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).default({}),
      }),
    )
    .max(REFINED_GRAPH_LIMITS.nodes),
  edges: z
    .array(
      z.object({
        type: z
          .string()
          .min(1)
          .max(REFINED_GRAPH_LIMITS.typeChars)
          .regex(/^[A-Za-z_][A-Za-z0-9_.:-]*$/),
        source_ref: z.string(),
        target_ref: z.string(),
        reasoning: z.string().max(REFINED_GRAPH_LIMITS.textChars),
        evidence: z.string().max(REFINED_GRAPH_LIMITS.textChars),
      }),
    )
    .max(REFINED_GRAPH_LIMITS.edges),
});
export type RefinedGraph = z.output<typeof RefinedGraph>;

/** A node the answerer may cite, with the edges that connect the context. */
export interface ContextNode {
  id: string;
  type: string;
  name: string;
  properties: Record<string, unknown>;
  score: number;
  /** Not retrieved for the question: an edge joins it to a retrieved node (its properties are not read). */
  neighbour?: true;
}

export interface ContextEdge {
  type: string;
  source_node_id: string;
  target_node_id: string;
}

export interface GroundedAnswer {
  answer: string;
  /** Node ids; the pipeline keeps only those of the retrieved context. */
  citations: string[];
}

/**
 * The three model tasks of the prompt pipeline. Two implementations: OpenAI structured outputs
 * (openai-model.ts) and a deterministic local one (local-model.ts) that needs no network.
 */
export interface PromptModel {
  readonly name: string;
  classify(prompt: string): Promise<Intent>;
  refine(prompt: string, promptKind: string): Promise<RefinedGraph>;
  answer(question: string, context: { nodes: ContextNode[]; edges: ContextEdge[] }): Promise<GroundedAnswer>;
}
