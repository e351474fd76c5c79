import { callProvider, UpstreamError } from '../errors';
import type { OpenAIConfig } from '../openai-client';
import { createOpenAIClient } from '../openai-client';
import type { EmbeddingProvider } from './contract';
import { EMBEDDING_DIMENSIONS as DIMENSIONS } from './contract';

// The embeddings endpoint takes up to 2048 inputs; smaller requests fail and retry cheaper.
const MAX_INPUTS_PER_REQUEST = 256;

/** OpenAI (or any compatible server) embeddings at 512 dimensions, validated before use. */
export function createOpenAIEmbeddingProvider(config: OpenAIConfig): EmbeddingProvider {
  const client = createOpenAIClient(config);
  return {
    name: 'openai',
    async embed(texts) {
      const vectors: number[][] = [];
      for (let start = 0; start < texts.length; start += MAX_INPUTS_PER_REQUEST) {
        const input = texts.slice(start, start + MAX_INPUTS_PER_REQUEST);
        const response = await callProvider('openai', () =>
          client.embeddings.create({
            model: config.OPENAI_EMBEDDING_MODEL,
            input,
            dimensions: DIMENSIONS,
            encoding_format: 'float',
          }),
        );
        const data = [...(response.data ?? [])].sort((a, b) => a.index - b.index);
        const valid =
          data.length === input.length &&
          data.every(
            (item) =>
              Array.isArray(item.embedding) &&
              item.embedding.length === DIMENSIONS &&
              item.embedding.every(Number.isFinite),
          );
        if (!valid) throw new UpstreamError('openai', 'invalid_response');
        vectors.push(...data.map((item) => item.embedding));
      }
      return vectors;
    },
  };
}
