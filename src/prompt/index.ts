import type { Config } from '../config';
import { createOpenAIClient, openAIEnabled, type OpenAIConfig } from '../llm/openai-client';
import { createLocalPromptModel } from './local-model';
import type { PromptModel } from './model';
import { createOpenAIPromptModel } from './openai-model';

/** OpenAI when OPENAI_API_KEY is set, else the deterministic local model. */
export function createPromptModel(config: OpenAIConfig & Pick<Config, 'OPENAI_CHAT_MODEL'>): PromptModel {
  return openAIEnabled(config)
    ? createOpenAIPromptModel(createOpenAIClient(config), config.OPENAI_CHAT_MODEL)
    : createLocalPromptModel();
}
