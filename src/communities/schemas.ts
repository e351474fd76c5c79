import { z } from 'zod';
import { LIMITS } from '../rules/limits';

const L = LIMITS.communities;

export const CommunityRefreshRequest = z
  .strictObject({
    force: z
      .boolean()
      .default(true)
      .describe(
        'Recompute even when the graph has not changed enough since the last pass (the schedule never forces).',
      ),
  })
  .meta({ id: 'CommunityRefreshRequest' });

export const CommunityListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(L.listMax).default(L.listDefault),
});

export const Community = z
  .object({
    id: z.uuid().describe('The community node (type `community`); its members link to it by MEMBER_OF.'),
    name: z.string(),
    importance_score: z.number().describe('The mean importance of its top members.'),
    size: z.number().int(),
    summary: z.string(),
    summary_source: z
      .enum(['extract', 'model'])
      .describe('`extract`: the deterministic extract (the local model); `model`: written by the hosted model.'),
    summary_status: z
      .enum(['current', 'pending', 'failed'])
      .describe(
        '`pending`: its membership changed and the model has yet to summarise it; `failed`: the model failed, ' +
          'the summary shown is its previous one or the extract (`summary_error` says why).',
      ),
    summary_error: z.string().nullable(),
    top_members: z.array(z.object({ id: z.uuid(), name: z.string(), type: z.string(), importance_score: z.number() })),
    computed_at: z.string(),
  })
  .meta({ id: 'Community' });

export const CommunityListResponse = z.array(Community);
export type CommunityListResponse = z.infer<typeof CommunityListResponse>;

export const CommunityPass = z
  .object({
    workspace_id: z.uuid(),
    refreshed: z.boolean(),
    reason: z.enum(['first_pass', 'forced', 'changed', 'unchanged']),
    changes: z.number().int().nullable().describe('Nodes and edges added or deleted since the last pass.'),
    threshold: z.number().int().nullable().describe('How many changes the next unforced pass needs.'),
    nodes: z.number().int(),
    edges: z.number().int(),
    communities: z.number().int(),
    modularity: z.number(),
    computed_at: z.string(),
    duration_ms: z.number(),
    summaries_pending: z
      .number()
      .int()
      .optional()
      .describe('Communities whose membership changed, left for the hosted model to summarise (0 locally).'),
    summaries: z
      .object({ summarised: z.number().int(), failed: z.number().int(), left: z.number().int() })
      .optional()
      .describe('What the summary step after the pass did: summarised, failed (summary kept), left for later.'),
  })
  .meta({ id: 'CommunityPass' });

export const CommunityRefreshResponse = z
  .object({ pass: CommunityPass, communities: CommunityListResponse })
  .meta({ id: 'CommunityRefreshResponse' });
export type CommunityRefreshResponse = z.infer<typeof CommunityRefreshResponse>;
