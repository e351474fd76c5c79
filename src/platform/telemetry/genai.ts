import { createHash } from 'node:crypto';
import type { Attributes, Span } from '@opentelemetry/api';
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace } from '@opentelemetry/api';

/**
 * Runs, steps and model calls as OpenTelemetry GenAI spans (semantic conventions for generative AI):
 * `invoke_agent <agent>` for a run, `execute_tool <tool>` for a step, `chat <model>` for a model
 * call. Names, models and token counts only: a goal, a tool's input or output, a prompt or an answer
 * is recorded only when the operator opts in with GENAI_CONTENT_VARIABLE (docs/operations.md,
 * "GenAI spans"). With tracing off, every span here is the API's no-op.
 */
export const GENAI_CONTENT_VARIABLE = 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT';

/** The attributes that carry content; the redacting processor drops them unless the operator opted in. */
export const GENAI_CONTENT_ATTRIBUTES = [
  'gen_ai.input.messages',
  'gen_ai.output.messages',
  'gen_ai.system_instructions',
  'gen_ai.tool.call.arguments',
  'gen_ai.tool.call.result',
] as const;

/** True when the operator asked for content on GenAI spans (`true` or `1`; off by default). */
export function genAiContentCaptured(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env[GENAI_CONTENT_VARIABLE]?.trim().toLowerCase();
  return value === 'true' || value === '1';
}

const tracer = () => trace.getTracer('weft-genai');

/** Content as an attribute value: JSON text, only when opted in. */
const content = (key: string, value: unknown): Attributes =>
  genAiContentCaptured() && value !== undefined
    ? { [key]: typeof value === 'string' ? value : JSON.stringify(value) }
    : {};

/** GenAI's message shape (`gen_ai.input.messages`): one text part per message. */
export const textMessage = (role: string, text: string) => ({ role, parts: [{ type: 'text', content: text }] });

/**
 * The ids a span is made with next, when it must have given ones (tracing.ts's id generator asks
 * here first): a run's `invoke_agent` span is written once, when the run ends, but its steps and
 * model calls name it as their parent while it runs, so its span id comes from the execution id.
 */
let requestedIds: { traceId: string; spanId: string } | undefined;

/** What tracing.ts's id generator hands out instead of random ids, while `recordAgentSpan` starts its span. */
export function requestedSpanIds(): { traceId: string; spanId: string } | undefined {
  return requestedIds;
}

/** A run's `invoke_agent` span id: 16 hex digits of the execution id's hash, the same in every worker. */
export const agentSpanId = (executionId: string) =>
  createHash('sha256').update(`invoke_agent:${executionId}`).digest('hex').slice(0, 16);

/**
 * Runs `work` with the run's `invoke_agent` span as the parent of what it starts (its steps' and model
 * calls' spans), in the trace the activity runs in. Without an active trace, as it is.
 */
export function withinAgentSpan<T>(executionId: string, work: () => T): T {
  const active = trace.getActiveSpan()?.spanContext();
  if (!active || !trace.isSpanContextValid(active)) return work();
  const agent = trace.setSpanContext(context.active(), {
    traceId: active.traceId,
    spanId: agentSpanId(executionId),
    traceFlags: active.traceFlags,
    isRemote: true,
  });
  return context.with(agent, work);
}

/**
 * Writes a finished run's `invoke_agent <agent>` span, from its start (`startedAt`) to now, in the
 * trace the finishing activity runs in, with the span id its steps named as their parent. Called
 * once per run, by the write that finished it.
 */
export function recordAgentSpan(run: {
  executionId: string;
  agent: string;
  startedAt: Date;
  status: string;
  errorCode?: string | null;
  model?: string;
  input?: unknown;
  output?: unknown;
}): void {
  const active = trace.getActiveSpan()?.spanContext();
  if (!active || !trace.isSpanContextValid(active) || !(active.traceFlags & TraceFlags.SAMPLED)) return;
  requestedIds = { traceId: active.traceId, spanId: agentSpanId(run.executionId) };
  let span: Span;
  try {
    span = tracer().startSpan(
      `invoke_agent ${run.agent}`,
      {
        kind: SpanKind.INTERNAL,
        startTime: run.startedAt,
        attributes: {
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': run.agent,
          ...(run.model ? { 'gen_ai.request.model': run.model } : {}),
          'weft.run.status': run.status,
          ...(run.errorCode ? { 'error.type': run.errorCode } : {}),
          ...content('gen_ai.input.messages', run.input),
          ...content('gen_ai.output.messages', run.output),
        },
      },
      // A root in the run's trace: the run outlives every activity that could be its parent.
      ROOT_CONTEXT,
    );
  } finally {
    requestedIds = undefined;
  }
  if (run.errorCode) span.setStatus({ code: SpanStatusCode.ERROR, message: run.errorCode });
  span.end();
}

/**
 * One step as an `execute_tool <tool>` span around `work`; `failure` reads a failed step's error code
 * from what `work` answered. The input and `result(answer)` only when content is captured.
 */
export function toolSpan<T>(
  tool: string,
  input: unknown,
  work: () => Promise<T>,
  read: (answer: T) => { failure?: string | null; result?: unknown },
): Promise<T> {
  return tracer().startActiveSpan(
    `execute_tool ${tool}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': tool,
        'gen_ai.tool.type': 'function',
        ...content('gen_ai.tool.call.arguments', input),
      },
    },
    async (span) => {
      try {
        const answer = await work();
        const { failure, result } = read(answer);
        if (failure) {
          span.setAttribute('error.type', failure);
          span.setStatus({ code: SpanStatusCode.ERROR, message: failure });
        } else {
          span.setAttributes(content('gen_ai.tool.call.result', result));
        }
        return answer;
      } catch (error) {
        span.setAttribute('error.type', (error as { code?: string }).code ?? 'error');
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** What a chat completion answered, as far as its span tells it. */
export interface ChatCompletionSeen {
  model?: string;
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  choices?: { finish_reason?: string | null; message?: unknown }[];
}

/**
 * One model call as a `chat <model>` span (a client span) around `call`: the provider, the model
 * asked for and the one that answered, token usage and finish reasons; the messages sent and the
 * choices answered only when content is captured.
 */
export function chatSpan<T extends ChatCompletionSeen>(
  request: { provider: string; model: string; messages: unknown; temperature?: number },
  call: () => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(
    `chat ${request.model}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': request.provider,
        'gen_ai.request.model': request.model,
        ...(request.temperature !== undefined ? { 'gen_ai.request.temperature': request.temperature } : {}),
        ...content('gen_ai.input.messages', request.messages),
      },
    },
    async (span) => {
      try {
        const completion = await call();
        if (completion.model) span.setAttribute('gen_ai.response.model', completion.model);
        const usage = completion.usage;
        if (typeof usage?.prompt_tokens === 'number')
          span.setAttribute('gen_ai.usage.input_tokens', usage.prompt_tokens);
        if (typeof usage?.completion_tokens === 'number') {
          span.setAttribute('gen_ai.usage.output_tokens', usage.completion_tokens);
        }
        const reasons = (completion.choices ?? []).map((choice) => choice.finish_reason ?? '').filter(Boolean);
        if (reasons.length > 0) span.setAttribute('gen_ai.response.finish_reasons', reasons);
        span.setAttributes(
          content(
            'gen_ai.output.messages',
            completion.choices?.map((choice) => choice.message),
          ),
        );
        return completion;
      } catch (error) {
        span.setAttribute('error.type', (error as { reason?: string }).reason ?? 'error');
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}
