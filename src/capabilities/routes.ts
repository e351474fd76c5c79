import type { Context } from 'koa';
import { z } from 'zod';
import type { AnyRoute } from '../platform/api/route';
import { defineRoute } from '../platform/api/route';
import type { AnyCapability } from './define';
import { CallerIdempotencyKey, parseIdempotencyKey } from './idempotency';
import { CapabilityList, envelopeOf } from './schemas';
import type { CapabilityService } from './service';
import { creditKindOf, scopeFor } from './service';

const writeErrors = {
  409:
    'idempotency_key_reused (this key was used with another tool or body) or ' +
    'idempotency_key_in_use (a call with this key is still running)',
};

/** Merges the tool's own outcomes with the layer's: one description per status. */
function errorsOf(tool: AnyCapability): Partial<Record<number, string>> {
  const merged: Partial<Record<number, string>> = { ...(tool.errors ?? {}) };
  if (tool.access === 'write') {
    for (const [status, text] of Object.entries(writeErrors)) {
      const code = Number(status);
      merged[code] = merged[code] ? `${merged[code]}; or ${text}` : text;
    }
  }
  return merged;
}

/** `agent.start_session` → `capAgentStartSession`: stable, so never rename a tool. */
export const operationIdOf = (name: string) =>
  `cap${name
    .split(/[._]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('')}`;

const IdempotencyHeaders = z.object({
  'Idempotency-Key': CallerIdempotencyKey.optional().describe(
    'Replays the first answer of a write tool for 24 hours (same tool and body); generated when absent. ' +
      'Keys of the form `<execution_id>:<step_no>` are reserved for run steps (422).',
  ),
});

const replayHeaders = {
  'Idempotency-Key': {
    description: 'The Idempotency-Key sent, or the one the server generated.',
    schema: { type: 'string' },
  },
  'Idempotent-Replayed': {
    description: '`true` when a write tool’s stored answer was replayed and nothing ran (absent otherwise).',
    schema: { type: 'string', enum: ['true'] },
  },
} as const;

/**
 * The Idempotency-Key header when the client sent one (an empty value is sent, and refused as 422
 * by the service). A run step's key is refused at the doors (here and MCP's `_meta`), not in the
 * service, which runs take their own keys through.
 */
const suppliedKey = (ctx: Context): string | undefined => {
  const header = ctx.request.headers['idempotency-key'];
  const value = Array.isArray(header) ? header.join(', ') : header;
  if (value) parseIdempotencyKey(CallerIdempotencyKey, value, ['header', 'Idempotency-Key']);
  return value;
};

/**
 * `POST /v1/cap/<tool>` for every tool of the registry, and `GET /v1/cap` listing them. Each route
 * is tagged `capabilities` plus its access tag, and needs the scope of that name.
 */
export function capabilityRoutes(capabilities: CapabilityService): AnyRoute[] {
  const toolRoutes = capabilities.tools.map((tool) => {
    const kind = creditKindOf(tool);
    const write = tool.access === 'write';
    // The scopes of the REST route doing the same work, which a call needs besides the tool's own.
    const also = tool.scopes?.length
      ? ` It also needs scope ${tool.scopes.join(' and ')}, as its REST route does.`
      : '';
    return defineRoute({
      method: 'post',
      path: `/v1/cap/${tool.name}`,
      operationId: operationIdOf(tool.name),
      tags: ['capabilities', write ? 'capabilities:write' : 'capabilities:read'],
      scope: scopeFor(tool),
      summary: `${tool.description}${kind ? '' : ' (free)'}`,
      description: write
        ? `${tool.description}. A write tool: its effect and the stored answer commit together, and a repeated ` +
          '`Idempotency-Key` (same tool and body, within 24 hours) replays that answer without running or charging ' +
          `again. The answer is the envelope \`{result, credits_charged, idempotency_key}\`.${also}`
        : `${tool.description}. A read tool: it caches nothing. The answer is the envelope ` +
          `\`{result, credits_charged, idempotency_key}\`.${also}`,
      ...(kind ? { credits: [kind] } : {}),
      ...(write ? { headers: IdempotencyHeaders } : {}),
      // A tool that takes nothing may be called without a body.
      body: z.preprocess((value) => value ?? {}, tool.input),
      example: tool.example,
      response: envelopeOf(tool.output),
      responseHeaders: write ? replayHeaders : { 'Idempotency-Key': replayHeaders['Idempotency-Key'] },
      errors: errorsOf(tool),
      // Every tool reads and writes through scoped reads and units of work, which carry and await the
      // credential's proof: a warm caller's replay is one statement (issue 27).
      recallable: true,
      handler: async ({ auth, ctx }) => {
        const { envelope, replayed } = await capabilities.invoke(
          auth,
          tool.name,
          (ctx.request as { body?: unknown }).body,
          {
            idempotencyKey: suppliedKey(ctx),
            correlationId: ctx.state.correlationId,
          },
        );
        ctx.set('Idempotency-Key', envelope.idempotency_key);
        if (replayed) ctx.set('Idempotent-Replayed', 'true');
        return envelope;
      },
    });
  });
  const listRoute = defineRoute({
    method: 'get',
    path: '/v1/cap',
    operationId: 'listCapabilities',
    tags: ['capabilities', 'capabilities:read'],
    scope: 'capabilities:read',
    summary: 'The mounted tools: name, tag, description, cost, and input and output JSON Schemas',
    description:
      'Every tool mounted under `POST /v1/cap/<tool>` (the same registry serves runs and the MCP server): its ' +
      'name, access tag, description, credit cost and kind, whether it replays an Idempotency-Key, and the JSON ' +
      'Schemas of its input and of its result.',
    response: CapabilityList,
    handler: async ({ auth }) => ({ tools: [...(await capabilities.describeFor(auth.workspaceId))] }),
  });
  // After every registry tool's own route, which a registry name meets first.
  const workspaceToolRoute = defineRoute({
    method: 'post',
    path: '/v1/cap/{name}',
    operationId: 'callWorkspaceCapability',
    tags: ['capabilities', 'connectors'],
    scope: 'capabilities:read',
    summary: 'Call one of the workspace’s own tools (a connector’s `<connector>.<tool>`)',
    description:
      'The tools of the workspace’s connectors (docs/connectors.md), listed by `GET /v1/cap` for this workspace ' +
      'only; another workspace’s, or an unknown name, is 404. A tool that is not read-only needs ' +
      '`capabilities:write` and replays a repeated `Idempotency-Key` like any write tool. The answer is the ' +
      'envelope `{result, credits_charged, idempotency_key}`; a remote failure is 502 with ' +
      '`{error, message, status?}` (`remote_error`, `timeout`, `response_too_large`, `unreachable`, ' +
      '`address_refused`, or `outcome_unknown`: a write sent whose answer was lost, never sent again), its charge ' +
      'refunded.',
    params: z.object({ name: z.string().min(3).max(100) }),
    headers: IdempotencyHeaders,
    body: z.preprocess((value) => value ?? {}, z.record(z.string(), z.unknown())),
    example: {},
    response: envelopeOf(z.unknown()),
    responseHeaders: replayHeaders,
    errors: {
      404: 'No such tool in this workspace',
      502: 'The remote tool failed (its charge refunded)',
      ...writeErrors,
    },
    handler: async ({ auth, ctx, params }) => {
      const { envelope, replayed } = await capabilities.invoke(
        auth,
        params.name,
        (ctx.request as { body?: unknown }).body,
        { idempotencyKey: suppliedKey(ctx), correlationId: ctx.state.correlationId },
      );
      ctx.set('Idempotency-Key', envelope.idempotency_key);
      if (replayed) ctx.set('Idempotent-Replayed', 'true');
      return envelope;
    },
  });
  return [listRoute, ...toolRoutes, workspaceToolRoute];
}
