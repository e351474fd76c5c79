import type OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import type { z } from 'zod';
import { chatSpan } from '../telemetry/genai';
import { callProvider, UpstreamError } from './errors';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface StructuredOutputRequest<T extends z.ZodType> {
  model: string;
  /** Names the JSON schema sent to the model (letters, digits, _ and -). */
  name: string;
  schema: T;
  messages: ChatMessage[];
  temperature?: number;
}

/**
 * One chat completion whose answer must match `schema`: the schema goes to the model as a strict
 * JSON-schema response format, and the answer is validated again with zod here, because a
 * compatible server may ignore the format. Any failure, including a non-conforming answer, is an
 * UpstreamError (502).
 */
export async function openAIStructuredOutput<T extends z.ZodType>(
  client: OpenAI,
  request: StructuredOutputRequest<T>,
): Promise<z.output<T>> {
  const temperature = request.temperature ?? 0;
  // A `chat <model>` span (GenAI semantic conventions): model and token usage, content only if opted in.
  const completion = await chatSpan(
    { provider: 'openai', model: request.model, messages: request.messages, temperature },
    () =>
      callProvider('openai', () =>
        client.chat.completions.create({
          model: request.model,
          messages: request.messages,
          temperature,
          response_format: zodResponseFormat(request.schema as never, request.name),
        }),
      ),
  );
  const content = completion.choices?.[0]?.message?.content;
  if (typeof content !== 'string') throw new UpstreamError('openai', 'invalid_response');
  let json: unknown;
  try {
    json = JSON.parse(content);
  } catch (error) {
    throw new UpstreamError('openai', 'invalid_response', undefined, { cause: error });
  }
  const parsed = request.schema.safeParse(json);
  if (!parsed.success) throw new UpstreamError('openai', 'invalid_response', undefined, { cause: parsed.error });
  return parsed.data;
}
