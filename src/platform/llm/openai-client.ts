import OpenAI from 'openai';
import type { Config } from '../config';

export type OpenAIConfig = Pick<
  Config,
  | 'OPENAI_API_KEY'
  | 'OPENAI_BASE_URL'
  | 'OPENAI_TIMEOUT_MS'
  | 'OPENAI_MAX_RETRIES'
  | 'OPENAI_CHAT_MODEL'
  | 'OPENAI_EMBEDDING_MODEL'
>;

/** True when the OpenAI path is configured; without a key Weft runs its local providers. */
export const openAIEnabled = (config: Pick<Config, 'OPENAI_API_KEY'>) => Boolean(config.OPENAI_API_KEY);

/**
 * The `openai` client built from config: `OPENAI_BASE_URL` points it at any OpenAI-compatible
 * server; timeout and retries are bounded so a slow provider becomes a 502, not a hung request.
 */
export function createOpenAIClient(config: OpenAIConfig): OpenAI {
  if (!config.OPENAI_API_KEY) throw new Error('OPENAI_API_KEY is not set');
  return new OpenAI({
    apiKey: config.OPENAI_API_KEY,
    baseURL: config.OPENAI_BASE_URL,
    timeout: config.OPENAI_TIMEOUT_MS,
    maxRetries: config.OPENAI_MAX_RETRIES,
  });
}
