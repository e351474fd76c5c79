import type { Config } from '../../platform/config';
import type { OpenAIConfig } from '../../platform/llm/openai-client';
import { createOpenAIClient, openAIEnabled } from '../../platform/llm/openai-client';
import type { PromptModel } from './contract';
import { createLocalPromptModel } from './local';
import { createOpenAIPromptModel } from './openai';

/** OpenAI when OPENAI_API_KEY is set, else the deterministic local model. */
export function createPromptModel(config: OpenAIConfig & Pick<Config, 'OPENAI_CHAT_MODEL'>): PromptModel {
  return openAIEnabled(config)
    ? createOpenAIPromptModel(createOpenAIClient(config), config.OPENAI_CHAT_MODEL)
    : createLocalPromptModel();
}
