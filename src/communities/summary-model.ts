import type OpenAI from 'openai';
import { z } from 'zod';
import type { Config } from '../platform/config';
import type { OpenAIConfig } from '../platform/llm/openai-client';
import { createOpenAIClient, openAIEnabled } from '../platform/llm/openai-client';
import { openAIStructuredOutput } from '../platform/llm/structured-output';
import { LIMITS } from '../rules/limits';

const L = LIMITS.communities;

/** What the model is shown of one community: bounded (LIMITS.communities.summaryMembers, summaryNameChars). */
export interface CommunitySummaryInput {
  name: string;
  size: number;
  member_types: { type: string; count: number }[];
  /** The most important members, most important first. */
  members: { name: string; type: string; importance_score: number }[];
}

/** Writes a community's summary with a hosted model; the local model has none (its summary is the extract). */
export interface CommunitySummariser {
  /** Names the model, stored on the community as `summary_model`. */
  readonly model: string;
  summarise(community: CommunitySummaryInput): Promise<string>;
}

const SummaryAnswer = z.object({ summary: z.string().min(1).max(L.summaryChars) });

const INSTRUCTIONS =
  'You summarise one community of a knowledge graph: a group of nodes more connected to each other than to the ' +
  'rest. From its size, the types of its members and its most important members, write two or three sentences ' +
  'saying what the group is about and who or what is central to it. Use only the given members; do not invent.';

/** Trims the input to its bounds: the model sees at most summaryMembers members, names cut to summaryNameChars. */
export function boundedSummaryInput(community: CommunitySummaryInput): CommunitySummaryInput {
  return {
    name: community.name.slice(0, L.summaryNameChars),
    size: community.size,
    member_types: community.member_types.slice(0, 10),
    members: community.members.slice(0, L.summaryMembers).map((m) => ({
      name: m.name.slice(0, L.summaryNameChars),
      type: m.type,
      importance_score: Math.round(m.importance_score * 1000) / 1000,
    })),
  };
}

export function createOpenAICommunitySummariser(client: OpenAI, model: string): CommunitySummariser {
  return {
    model,
    async summarise(community) {
      const { summary } = await openAIStructuredOutput(client, {
        model,
        name: 'community_summary',
        schema: SummaryAnswer,
        messages: [
          { role: 'system', content: INSTRUCTIONS },
          { role: 'user', content: JSON.stringify(boundedSummaryInput(community)) },
        ],
      });
      return summary.trim();
    },
  };
}

/** OpenAI when OPENAI_API_KEY is set; null for the local model, whose summary stays the extract. */
export function createCommunitySummariser(
  config: OpenAIConfig & Pick<Config, 'OPENAI_CHAT_MODEL'>,
): CommunitySummariser | null {
  return openAIEnabled(config)
    ? createOpenAICommunitySummariser(createOpenAIClient(config), config.OPENAI_CHAT_MODEL)
    : null;
}
