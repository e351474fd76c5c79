import type { AgentSkill, Message } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { LIMITS } from '../rules/limits';
import { DispatchRunRequest } from '../runs/schemas';

/**
 * What a message may start (issue 42 item 2): the `llm` agent with the message's text as its goal,
 * or one of the playbook templates that need nothing of a workspace but its graph. A message picks
 * one with `metadata.skill` (default `llm`); `metadata.approval` and `metadata.max_steps` tune an
 * `llm` run as `POST /v1/runs` does.
 */
interface SkillTemplate {
  name: string;
  description: string;
  examples: string[];
  tags: string[];
  /** The dispatch this skill makes of the message's text. */
  dispatch(text: string, metadata: Record<string, unknown>): unknown;
}

export const A2A_SKILLS: Record<string, SkillTemplate> = {
  llm: {
    name: 'Agent run (llm)',
    description:
      'A durable llm run with the message’s text as its goal: the model chooses Weft’s tools (search, ' +
      'remember, graph reads, billing), its writes wait for a human approval (input-required), and its final ' +
      'answer is the task’s `answer` artifact. metadata.approval: writes (default), all or none; ' +
      'metadata.max_steps: how many tool calls.',
    examples: ['find the billing module', 'remember that the invoice service owns refunds'],
    tags: ['agent', 'llm', 'durable'],
    dispatch: (text, metadata) => ({
      agent: 'llm',
      input: {
        goal: text,
        ...(metadata.approval !== undefined ? { approval: metadata.approval } : {}),
        ...(metadata.max_steps !== undefined ? { max_steps: metadata.max_steps } : {}),
      },
    }),
  },
  search: {
    name: 'Search the knowledge graph',
    description: 'A one-step playbook: `ontology.search` with the message’s text as the query.',
    examples: ['billing module'],
    tags: ['playbook', 'search'],
    dispatch: (text) => ({
      agent: 'playbook',
      input: { steps: [{ tool: 'ontology.search', input: { query: text } }] },
    }),
  },
  remember: {
    name: 'Remember, after approval',
    description:
      'A one-step playbook: `ontology.remember` of the message’s text, which waits for a reviewer’s approval ' +
      '(input-required) before anything is written.',
    examples: ['the invoice service owns refunds'],
    tags: ['playbook', 'write', 'approval'],
    dispatch: (text) => ({
      agent: 'playbook',
      input: { steps: [{ tool: 'ontology.remember', input: { text }, requires_approval: true }] },
    }),
  },
  'credits-balance': {
    name: 'Credit balance',
    description: 'A one-step playbook: `billing.credits_balance` (the message’s text is not used).',
    examples: ['what is my balance'],
    tags: ['playbook', 'billing'],
    dispatch: () => ({ agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance', input: {} }] } }),
  },
};

/** The card's skills, one per template. */
export const cardSkills = (): AgentSkill[] =>
  Object.entries(A2A_SKILLS).map(([id, skill]) => ({
    id,
    name: skill.name,
    description: skill.description,
    tags: skill.tags,
    examples: skill.examples,
    inputModes: ['text/plain'],
    outputModes: ['text/plain', 'application/json'],
    securityRequirements: [],
  }));

/** The message's text: its text parts, joined. */
export const textOf = (message: Message): string =>
  message.parts
    .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
    .filter((text) => text.trim() !== '')
    .join('\n')
    .trim();

/** The message's first data part, if any. */
export const dataOf = (message: Message): unknown =>
  message.parts.find((part) => part.content?.$case === 'data')?.content?.value;

/**
 * The dispatch a new message makes: its skill's template over its text, checked as `POST /v1/runs`
 * checks a body (a refusal is the JSON-RPC invalid-params error naming the field). The message id is
 * the run's idempotency key, so a client's retry of one message starts one run.
 */
export function dispatchOf(message: Message, requestMetadata: Record<string, unknown> | undefined) {
  const metadata = { ...requestMetadata, ...message.metadata };
  const skillId = typeof metadata.skill === 'string' ? metadata.skill : 'llm';
  const skill = Object.hasOwn(A2A_SKILLS, skillId) ? A2A_SKILLS[skillId] : undefined;
  if (!skill) throw new RequestMalformedError(`Unknown skill '${skillId.slice(0, 100)}'; see the agent card`);
  const text = textOf(message);
  if (!text) throw new RequestMalformedError('The message has no text part: say what the run should do');
  const key = `a2a:${message.messageId}`;
  const parsed = DispatchRunRequest.safeParse({
    ...(skill.dispatch(text, metadata) as object),
    ...(message.messageId && key.length <= LIMITS.idempotencyKeyChars ? { idempotency_key: key } : {}),
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new RequestMalformedError(`${issue.path.join('.') || 'message'}: ${issue.message}`);
  }
  return parsed.data;
}
