import { z } from 'zod';
import { defineRoute } from '../platform/api/route';
import { TOO_MANY_STREAMS } from '../platform/api/sse';
import type { PromptApi } from './dispatcher';
import { PROMPT_MAX_CHARS, PromptRequest, PromptResponse, PromptStreamRequest } from './schemas';
import type { createPromptStream } from './stream';

const tags = ['prompt'] as const;
const errors = {
  404: 'Workspace or tenant missing',
  502: 'The model or embedding provider is unavailable; credits refunded',
};

export const promptRoutes = (deps: { api: PromptApi; stream: ReturnType<typeof createPromptStream> }) => [
  defineRoute({
    method: 'post',
    path: '/v1/ontology/prompt',
    tags,
    scope: 'prompt:write',
    operationId: 'runPrompt',
    summary: 'Classify a prompt, then extract graph facts (update), answer from the graph (query), or both',
    description:
      `Runs a prompt of at most ${PROMPT_MAX_CHARS} characters as a durable workflow and waits for it: classify ` +
      '(unless `force_intent`), reserve the intent’s cost, extract and persist nodes and edges, answer with ' +
      'citations. On failure every write is undone and the credits refunded. A uuid `X-Correlation-Id` header ' +
      'makes a retry return the first result instead of running again.',
    credits: ['ontology.prompt.update', 'ontology.prompt.query', 'ontology.prompt.both'],
    headers: z.object({
      'X-Correlation-Id': z
        .uuid()
        .optional()
        .describe('Names this prompt: a retry with the same id returns the first result without charging again.'),
    }),
    body: PromptRequest,
    example: { prompt: 'Ada Lovelace works at Analytical Engines Ltd. Who is Ada Lovelace?' },
    response: PromptResponse,
    errors: { ...errors, 409: 'The `X-Correlation-Id` belongs to another workspace’s execution' },
    handler: ({ auth, body, ctx }) => deps.api.run(auth, body, ctx.state.correlationId),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/ontology/prompt/stream',
    tags,
    scope: 'prompt:write',
    summary: 'The query pipeline as server-sent events: embedding, retrieval, llm_call, parse, then done or error',
    operationId: 'streamPrompt',
    description:
      `Answers a question (at most ${PROMPT_MAX_CHARS} characters) from the graph as \`text/event-stream\`: the ` +
      'steps embedding, retrieval, llm_call and parse, each as a start and a done event, then `done` (narrative ' +
      'and citations) or `error` (credits refunded). Refusals (402, 404, 409, 422) come before the stream ' +
      'opens, as JSON. The stream re-checks its credential while it runs: revoked, expired or its user removed ' +
      'from the workspace, it ends with an `error` event whose `error_code` says which (`credential_revoked`, ' +
      '`credential_expired`, `member_removed`), refunded.',
    credits: ['ontology.prompt.query'],
    body: PromptStreamRequest,
    example: { prompt: 'Where does Ada Lovelace work?' },
    produces: 'text/event-stream',
    errors: { ...errors, 409: 'The `X-Correlation-Id` already names another run', 429: TOO_MANY_STREAMS },
    handler: ({ auth, body, ctx }) => deps.stream(ctx, auth, body.prompt),
  }),
];
