import type OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { toWireName, wireNames } from '../capabilities/wire-names';
import type { Config } from '../platform/config';
import { callProvider, UpstreamError } from '../platform/llm/errors';
import type { OpenAIConfig } from '../platform/llm/openai-client';
import { createOpenAIClient, openAIEnabled } from '../platform/llm/openai-client';
import { chatSpan } from '../platform/telemetry/genai';
import type { PlannedMove, PlannerHistory } from './planner';
import { planLocally } from './planner';

/** A tool the agent may call, as the registry describes it. */
export interface AgentTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** One earlier tool step of the run, with what it answered (or why it failed). */
export interface AgentTurn extends PlannerHistory {
  stepNo: number;
  input: Record<string, unknown>;
}

/**
 * The llm agent's next move. A tool move names the capability (or, for a tool the model made up,
 * the name it sent); `refusal` says why the call cannot run before the registry is even asked (its
 * arguments are not a JSON object). The run service checks the tool and its input either way.
 */
export type AgentMove = (PlannedMove & { kind: 'final' }) | (PlannedMove & { kind: 'tool'; refusal?: string });

export interface AgentModel {
  readonly name: string;
  /** The provider's model it asks (`OPENAI_CHAT_MODEL`); none for the local planner. */
  readonly model?: string;
  next(request: { goal: string; tools: readonly AgentTool[]; history: readonly AgentTurn[] }): Promise<AgentMove>;
}

/** The local deterministic planner (src/runs/planner.ts): no network, the default. */
export const localAgentModel: AgentModel = {
  name: 'local',
  next: async ({ goal, history }) => planLocally(goal, history),
};

const SYSTEM =
  "You are Weft's agent. Reach the user's goal by calling the tools given, one call at a time; each tool's " +
  'result (or error) comes back to you. When you have what you need, or no tool can help, reply with a short ' +
  'final answer instead of a tool call. An error result means your call was refused: fix it or answer.';

const callId = (stepNo: number) => `call_${stepNo}`;

/** What a finished step tells the model: its output, or its error. */
const resultOf = (turn: AgentTurn) =>
  JSON.stringify(
    turn.status === 'SUCCEEDED'
      ? (turn.output ?? null)
      : { error: turn.error?.code ?? 'failed', message: turn.error?.message ?? `The step is ${turn.status}` },
  );

/** The conversation so far: the goal, then each step as the model's tool call and the tool's answer. */
export function agentMessages(goal: string, history: readonly AgentTurn[]): ChatCompletionMessageParam[] {
  return [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: goal },
    ...history.flatMap((turn): ChatCompletionMessageParam[] => [
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: callId(turn.stepNo),
            type: 'function',
            function: { name: toWireName(turn.tool), arguments: JSON.stringify(turn.input) },
          },
        ],
      },
      { role: 'tool', tool_call_id: callId(turn.stepNo), content: resultOf(turn) },
    ]),
  ];
}

/** The registry's tools as function tools, under their wire names (`ontology.search` → `ontology_search`). */
export function agentTools(tools: readonly AgentTool[]): ChatCompletionTool[] {
  return tools.map((tool) => {
    // The `$schema` keyword is metadata a function's parameters do not need (some servers refuse it).
    const { $schema: _dialect, ...parameters } = tool.inputSchema;
    return {
      type: 'function',
      function: { name: toWireName(tool.name), description: tool.description, parameters },
    };
  });
}

function parseArguments(text: string): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(text || '{}');
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * The llm agent on chat-completions tool calling: one request per move, the tools offered with
 * their JSON Schemas, parallel calls off. A tool call comes back as a tool move (its wire name
 * mapped back to the capability; an unknown name is passed on as sent, for the run service to
 * refuse), a plain answer as the final answer. Provider failures are UpstreamErrors (the client's
 * own timeout and retries bound them).
 */
export function createOpenAIAgentModel(client: OpenAI, model: string): AgentModel {
  return {
    name: 'openai',
    model,
    async next({ goal, tools, history }) {
      const byWire = wireNames(tools.map((tool) => tool.name));
      const messages = agentMessages(goal, history);
      const completion = await chatSpan({ provider: 'openai', model, messages, temperature: 0 }, () =>
        callProvider('openai', () =>
          client.chat.completions.create({
            model,
            temperature: 0,
            messages,
            ...(tools.length > 0 ? { tools: agentTools(tools), tool_choice: 'auto', parallel_tool_calls: false } : {}),
          }),
        ),
      );
      const message = completion.choices?.[0]?.message;
      if (!message) throw new UpstreamError('openai', 'invalid_response');
      const call = message.tool_calls?.find((candidate) => candidate.type === 'function');
      if (call) {
        const tool = byWire.get(call.function.name) ?? call.function.name;
        const input = parseArguments(call.function.arguments);
        if (input) return { kind: 'tool', tool, input };
        return { kind: 'tool', tool, input: {}, refusal: 'The arguments are not a JSON object' };
      }
      if (typeof message.content !== 'string') throw new UpstreamError('openai', 'invalid_response');
      return { kind: 'final', answer: message.content };
    },
  };
}

/** OpenAI when OPENAI_API_KEY is set, else the local deterministic planner. */
export function createAgentModel(config: OpenAIConfig & Pick<Config, 'OPENAI_CHAT_MODEL'>): AgentModel {
  return openAIEnabled(config)
    ? createOpenAIAgentModel(createOpenAIClient(config), config.OPENAI_CHAT_MODEL)
    : localAgentModel;
}
