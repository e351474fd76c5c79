// The model and embedding providers: one interface each, an OpenAI and a local implementation.
export { createOpenAIClient, openAIEnabled, type OpenAIConfig } from './openai-client';
export { createEmbeddingProvider, EMBEDDING_DIMENSIONS, type EmbeddingProvider } from './embedding-provider';
export { createLocalEmbeddingProvider, localEmbedding, tokenize } from './local-embedding';
export { createOpenAIEmbeddingProvider } from './openai-embedding';
export { openAIStructuredOutput, type ChatMessage, type StructuredOutputRequest } from './structured-output';
export { UpstreamError, toUpstreamError, callProvider, type UpstreamReason } from './errors';
