import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { localEmbedding } from '../../src/platform/llm/embedding/local';

export type FakeBehaviour =
  | { kind: 'ok' }
  | { kind: 'status'; status: number }
  | { kind: 'delay'; ms: number }
  | { kind: 'wrong_dimensions' };

export interface FakeRequest {
  path: string;
  authorization: string | undefined;
  body: any;
}

/**
 * An OpenAI-compatible server on loopback, driven by the real `openai` client in tests.
 * Embeddings are the local provider's vectors for the same texts (so search results stay meaningful);
 * chat completions answer with whatever `chatReplies` holds next. `behave` injects failures.
 */
/** A function call the fake model makes (chat-completions tool calling); `arguments` is raw JSON text. */
export interface FakeToolCall {
  name: string;
  arguments: string;
}

/**
 * A per-request answer for chat completions, chosen by the structured output's schema name
 * (`response_format.json_schema.name`, undefined for a tool-calling request): a reply, tool calls,
 * an HTTP error, or a reply after a delay. `undefined` falls back to `chatReplies`.
 */
export type ChatScript = (
  schemaName: string | undefined,
  body: any,
) => { content: string; delayMs?: number } | { toolCalls: FakeToolCall[] } | { status: number } | undefined;

export interface FakeOpenAI {
  /** The base URL to give the client (`…/v1`). */
  baseUrl: string;
  requests: FakeRequest[];
  chatReplies: string[];
  behave(behaviour: FakeBehaviour): void;
  /** Scripts chat completions per schema name; see ChatScript. */
  scriptChat(script: ChatScript | undefined): void;
  close(): Promise<void>;
}

function readJson(req: IncomingMessage): Promise<any> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}'));
      } catch {
        resolve(undefined);
      }
    });
  });
}

function send(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  let behaviour: FakeBehaviour = { kind: 'ok' };
  let chatScript: ChatScript | undefined;
  const requests: FakeRequest[] = [];
  const chatReplies: string[] = [];
  const pending = new Set<ServerResponse>();

  const server: Server = createServer(async (req, res) => {
    const body = await readJson(req);
    const path = (req.url ?? '').split('?')[0]!;
    requests.push({ path, authorization: req.headers.authorization, body });
    const current = behaviour;
    if (current.kind === 'status')
      return send(res, current.status, { error: { message: 'injected failure', type: 'server_error' } });
    if (current.kind === 'delay') {
      pending.add(res);
      await new Promise((resolve) => setTimeout(resolve, current.ms));
      pending.delete(res);
      if (res.destroyed) return;
    }
    if (path === '/v1/embeddings') {
      const inputs: string[] = Array.isArray(body?.input) ? body.input : [body?.input];
      const dims = current.kind === 'wrong_dimensions' ? 3 : (body?.dimensions ?? 1536);
      return send(res, 200, {
        object: 'list',
        model: body?.model,
        data: inputs.map((text, index) => ({
          object: 'embedding',
          index,
          embedding: localEmbedding(String(text)).slice(0, dims),
        })),
        usage: { prompt_tokens: inputs.length, total_tokens: inputs.length },
      });
    }
    if (path === '/v1/chat/completions') {
      const scripted = chatScript?.(body?.response_format?.json_schema?.name, body);
      if (scripted && 'status' in scripted) {
        return send(res, scripted.status, { error: { message: 'injected failure', type: 'server_error' } });
      }
      if (scripted && 'toolCalls' in scripted) {
        return send(res, 200, {
          id: `chatcmpl-${requests.length}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body?.model,
          choices: [
            {
              index: 0,
              finish_reason: 'tool_calls',
              message: {
                role: 'assistant',
                content: null,
                refusal: null,
                tool_calls: scripted.toolCalls.map((call, index) => ({
                  id: `call_fake_${requests.length}_${index}`,
                  type: 'function',
                  function: { name: call.name, arguments: call.arguments },
                })),
              },
            },
          ],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        });
      }
      if (scripted?.delayMs) {
        pending.add(res);
        await new Promise((resolve) => setTimeout(resolve, scripted.delayMs));
        pending.delete(res);
        if (res.destroyed) return;
      }
      return send(res, 200, {
        id: `chatcmpl-${requests.length}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body?.model,
        choices: [
          {
            index: 0,
            finish_reason: 'stop',
            message: { role: 'assistant', content: scripted?.content ?? chatReplies.shift() ?? '{}', refusal: null },
          },
        ],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      });
    }
    return send(res, 404, { error: { message: `no route ${path}` } });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    chatReplies,
    behave(next) {
      behaviour = next;
    },
    scriptChat(next) {
      chatScript = next;
    },
    async close() {
      for (const res of pending) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
