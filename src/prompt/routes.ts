import { defineRoute } from '../platform/api/route';
import type { PromptApi } from './dispatcher';
import { PromptRequest, PromptResponse, PromptStreamRequest } from './schemas';
import type { createPromptStream } from './stream';

const tags = ['prompt'];
const errors = {
  402: 'Insufficient credits or a locked account; nothing ran',
  404: 'Workspace or tenant missing',
  502: 'The model or embedding provider is unavailable; credits refunded',
};

export const promptRoutes = (deps: { api: PromptApi; stream: ReturnType<typeof createPromptStream> }) => [
  defineRoute({
    method: 'post',
    path: '/v1/ontology/prompt',
    tags,
    scope: 'prompt:write',
    summary: 'Classify a prompt, then extract graph facts (update), answer from the graph (query), or both',
    body: PromptRequest,
    response: PromptResponse,
    errors,
    handler: ({ auth, body, ctx }) => deps.api.run(auth, body, ctx.state.correlationId),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/ontology/prompt/stream',
    tags,
    scope: 'prompt:write',
    summary:
      'The query pipeline as server-sent events: embedding, retrieval, llm_call, parse (start/done), then done or error',
    body: PromptStreamRequest,
    produces: 'text/event-stream',
    errors,
    handler: ({ auth, body, ctx }) => deps.stream(ctx, auth, body.prompt),
  }),
];
