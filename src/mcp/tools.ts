import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { AnyCapability } from '../capabilities/define';
import type { CapabilityDescription } from '../capabilities/schemas';
import type { InvokeOutcome } from '../capabilities/service';
import { scopesFor } from '../capabilities/service';
import { toWireName } from '../capabilities/wire-names';
import type { ScopeName } from '../platform/auth/scopes';
import type { ValidationIssue } from '../platform/errors';
import { toolResult } from './direct-calls';

/**
 * The `_meta` keys Weft reads on `tools/call` and writes on its results. `weft/` is Weft's own
 * prefix (MCP reserves only `modelcontextprotocol` and `mcp` ones).
 */
export const META = {
  /** On a call: the Idempotency-Key of `POST /v1/cap/<tool>`, replaying a write tool's first answer. */
  idempotencyKey: 'weft/idempotencyKey',
  /** On a result: the envelope's `credits_charged`. */
  creditsCharged: 'weft/creditsCharged',
  /** On a result: true when a write tool's stored answer was replayed and nothing ran. */
  replayed: 'weft/replayed',
  /** On an error result: `{status, detail}`, the HTTP status and body `POST /v1/cap/<tool>` would answer. */
  error: 'weft/error',
} as const;

export interface McpTool {
  /** The registry's name (`agent.claim_work`); `definition.name` is its wire name (`agent_claim_work`). */
  capability: string;
  /** Every scope a call needs (`scopesFor`): the tool is listed only to a credential holding them all. */
  scopes: ScopeName[];
  definition: Tool;
}

const credits = (cost: number, kind: string | null) =>
  cost === 0 || !kind ? 'Free.' : `Costs ${cost} credit${cost === 1 ? '' : 's'} (${kind}), charged before any work.`;

/**
 * The MCP tool list, generated from the registry's descriptions (the same JSON Schemas as
 * `GET /v1/cap`). Read tools are `readOnlyHint`; a write tool is `idempotentHint` when a repeat
 * with the same input changes nothing more (`repeatSafe`), which is more than replaying a key, and
 * `destructiveHint` when it deletes or overwrites (`destructive`).
 */
export function mcpTools(tools: readonly AnyCapability[], descriptions: readonly CapabilityDescription[]): McpTool[] {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  return descriptions.map((description) => {
    const tool = byName.get(description.name);
    if (!tool) throw new Error(`no capability ${description.name}`);
    const read = tool.access === 'read';
    const replay = read ? '' : ` Replays its first answer for a repeated _meta["${META.idempotencyKey}"].`;
    return {
      capability: tool.name,
      scopes: scopesFor(tool),
      definition: {
        name: toWireName(tool.name),
        title: tool.name,
        description: `${description.description}. ${credits(description.cost, description.credit_kind)}${replay}`,
        inputSchema: description.input_schema as Tool['inputSchema'],
        outputSchema: description.output_schema as Tool['outputSchema'],
        annotations: read
          ? { readOnlyHint: true, openWorldHint: tool.openWorld === true }
          : {
              readOnlyHint: false,
              destructiveHint: tool.destructive === true,
              idempotentHint: tool.repeatSafe === true,
              openWorldHint: tool.openWorld === true,
            },
      },
    };
  });
}

/** A tool's answer: its result as structured content and as JSON text, the envelope's rest in `_meta`. */
export function successResult({ envelope, replayed }: InvokeOutcome): CallToolResult {
  return toolResult(envelope.result as Record<string, unknown>, {
    [META.creditsCharged]: envelope.credits_charged,
    [META.idempotencyKey]: envelope.idempotency_key,
    ...(replayed ? { [META.replayed]: true } : {}),
  });
}

/**
 * A refused or failed call as a tool result the model can read (MCP: tool execution errors are
 * results with `isError`, not protocol errors): the status and `detail` that `/v1/cap` would answer.
 * No structured content, since it would have to match the tool's output schema.
 */
export function errorResult(status: number, detail: unknown): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify({ status, detail }) }],
    _meta: { [META.error]: { status, detail } },
  };
}

/** A 422 located in the call's `arguments` (the capability layer says `body`, the HTTP door's word). */
export const locateInArguments = (issues: readonly ValidationIssue[]): ValidationIssue[] =>
  issues.map((issue) => (issue.loc[0] === 'body' ? { ...issue, loc: ['arguments', ...issue.loc.slice(1)] } : issue));
