// The model and embedding providers: one interface each, an OpenAI and a local implementation.

export { EMBEDDING_DIMENSIONS, type EmbeddingProvider } from './embedding/contract';
export { createEmbeddingProvider } from './embedding/factory';
export { createLocalEmbeddingProvider, localEmbedding, tokenize } from './embedding/local';
export { createOpenAIEmbeddingProvider } from './embedding/openai';
export { callProvider, toUpstreamError, UpstreamError, type UpstreamReason } from './errors';
export { createOpenAIClient, type OpenAIConfig, openAIEnabled } from './openai-client';
export { type ChatMessage, openAIStructuredOutput, type StructuredOutputRequest } from './structured-output';
