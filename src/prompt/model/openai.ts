import type OpenAI from 'openai';
import { z } from 'zod';
import { UpstreamError } from '../../platform/llm/errors';
import { openAIStructuredOutput } from '../../platform/llm/structured-output';
import type { PromptModel } from './contract';
import { INTENTS, RefinedGraph } from './contract';

// Strict structured outputs take no free-form objects, so properties travel as key/value pairs.
const RefinedGraphWire = z.object({
  nodes: z.array(
    z.object({
      ref: z.string(),
      type: z.string(),
      name: z.string(),
      properties: z.array(z.object({ key: z.string(), value: z.string() })),
    }),
  ),
  edges: RefinedGraph.shape.edges,
});

const IntentAnswer = z.object({ intent: z.enum(INTENTS) });
const AnswerWithCitations = z.object({ answer: z.string().max(4000), citations: z.array(z.string()).max(50) });

const CLASSIFY =
  `Classify the user's prompt for a knowledge graph. "update": it states facts to store. ` +
  `"query": it only asks a question. "both": it states facts and asks a question.`;
const REFINE =
  'Extract a knowledge graph from the text. Nodes have a short local ref (n1, n2, ...), a lower_snake_case type ' +
  '(person, organization, place, concept, ...), a name, and scalar properties. Edges connect refs with an ' +
  'UPPER_SNAKE_CASE type, a one-sentence reasoning and the evidence text they come from. ' +
  'Extract only what the text states.';
const ANSWER =
  'Answer the question using only the given graph context. Cite the ids of the nodes you used in "citations". ' +
  'If the context does not answer it, say so and cite nothing.';

/** The prompt model on an OpenAI-compatible server: three structured-output calls validated by zod. */
export function createOpenAIPromptModel(client: OpenAI, model: string): PromptModel {
  return {
    name: 'openai',
    async classify(prompt) {
      const { intent } = await openAIStructuredOutput(client, {
        model,
        name: 'intent',
        schema: IntentAnswer,
        messages: [
          { role: 'system', content: CLASSIFY },
          { role: 'user', content: prompt },
        ],
      });
      return intent;
    },
    async refine(prompt, promptKind) {
      const wire = await openAIStructuredOutput(client, {
        model,
        name: 'refined_graph',
        schema: RefinedGraphWire,
        messages: [
          { role: 'system', content: `${REFINE} The text is of kind ${promptKind}.` },
          { role: 'user', content: prompt },
        ],
      });
      const graph = RefinedGraph.safeParse({
        nodes: wire.nodes.map((node) => ({
          ...node,
          properties: Object.fromEntries(node.properties.map((p) => [p.key, p.value])),
        })),
        edges: wire.edges,
      });
      if (!graph.success) throw new UpstreamError('openai', 'invalid_response', undefined, { cause: graph.error });
      return graph.data;
    },
    answer: (question, context) =>
      openAIStructuredOutput(client, {
        model,
        name: 'grounded_answer',
        schema: AnswerWithCitations,
        messages: [
          { role: 'system', content: ANSWER },
          { role: 'user', content: JSON.stringify({ question, nodes: context.nodes, edges: context.edges }) },
        ],
      }),
  };
}
