import type { OpenAIConfig } from '../openai-client';
import { openAIEnabled } from '../openai-client';
import type { EmbeddingProvider } from './contract';
import { createLocalEmbeddingProvider } from './local';
import { createOpenAIEmbeddingProvider } from './openai';

/** OpenAI when OPENAI_API_KEY is set, else the deterministic local provider (no network). */
export function createEmbeddingProvider(config: OpenAIConfig): EmbeddingProvider {
  return openAIEnabled(config) ? createOpenAIEmbeddingProvider(config) : createLocalEmbeddingProvider();
}
