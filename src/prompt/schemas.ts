import { z } from 'zod';
import { EdgeResponse, NodeResponse } from '../graph/schemas';
import { ERROR_CODES } from '../platform/errors';
import { INTENTS } from './model/contract';

/** Long enough for a page of notes; the refiner and the model see the whole prompt. */
export const PROMPT_MAX_CHARS = 20_000;

// Not trimmed: the audit's source_hash is of the raw prompt (knowledge-graph-service-api.md §2.5).
const promptText = z
  .string()
  .max(PROMPT_MAX_CHARS)
  .refine((text) => text.trim().length > 0, 'The prompt is empty');

export const PromptRequest = z
  .object({
    prompt: promptText,
    force_intent: z.enum(INTENTS).optional().describe('Skips intent classification.'),
    prompt_kind: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,39}$/)
      .default('markdown_text')
      .describe('The refiner family (free-form, e.g. markdown_text).'),
    stage: z
      .boolean()
      .optional()
      .describe(
        'true: the extracted facts become a change-set waiting for a reviewer instead of being written. The ' +
          'workspace’s `staging.update_prompts` stages every update prompt; false does not opt out of it.',
      ),
  })
  .meta({ id: 'PromptRequest' });

export const PromptStreamRequest = z.object({ prompt: promptText }).meta({ id: 'PromptStreamRequest' });

export const PromptResponse = z
  .object({
    correlation_id: z.uuid(),
    intent: z.enum(INTENTS),
    nodes: z.array(NodeResponse).describe('Nodes the prompt persisted or referenced.'),
    edges: z.array(EdgeResponse),
    nodes_created: z.number().int(),
    edges_created: z.number().int(),
    answer: z.string().nullable().describe('The grounded answer, for query and both.'),
    citations: z.array(z.uuid()).describe('Ids of nodes of this workspace the answer rests on.'),
    credit_receipt: z.object({ ledger_id: z.uuid(), kind: z.string(), amount: z.number().int() }),
    change_set_id: z
      .uuid()
      .nullable()
      .optional()
      .describe(
        'A staged prompt’s change-set (`GET /v1/ontology/change-sets/{id}`): nothing was written, `nodes` and ' +
          '`edges` are empty. Absent or null otherwise.',
      ),
  })
  .meta({ id: 'PromptResponse' });

/** A settled run's domain failure, as its row keeps it for replays (platform/temporal/failures.ts). */
export const StoredFailure = z.object({
  code: z.enum(ERROR_CODES),
  errorClass: z.string(),
  detail: z.unknown(),
  retryAfterSeconds: z.number().optional(),
});
