// The model and embedding providers: one interface each, an OpenAI and a local implementation.

export { createEmbeddingProvider, EMBEDDING_DIMENSIONS, type EmbeddingProvider } from './embedding-provider';
export { callProvider, toUpstreamError, UpstreamError, type UpstreamReason } from './errors';
export { createLocalEmbeddingProvider, localEmbedding, tokenize } from './local-embedding';
export { createOpenAIClient, type OpenAIConfig, openAIEnabled } from './openai-client';
export { createOpenAIEmbeddingProvider } from './openai-embedding';
export { type ChatMessage, openAIStructuredOutput, type StructuredOutputRequest } from './structured-output';
