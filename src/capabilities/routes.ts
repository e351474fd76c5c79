import type { Context } from 'koa';
import { z } from 'zod';
import type { AnyRoute } from '../platform/api/route';
import { defineRoute } from '../platform/api/route';
import { CapabilityList, envelopeOf } from './schemas';
import type { CapabilityService } from './service';
import { creditKindOf, scopeFor } from './service';

const readErrors = {
  402: 'Insufficient credits, before any work: {"detail":{"error":"insufficient_credits","kind","required","available"}}',
  404: 'An id that is not in the caller’s workspace',
};
const writeErrors = {
  ...readErrors,
  409: 'A conflict of the tool, or idempotency_key_reused (another tool or body) or idempotency_key_in_use',
};

/** The Idempotency-Key header when the client sent one (an empty value is sent, and refused as 422). */
const suppliedKey = (ctx: Context): string | undefined => {
  const value = ctx.request.headers['idempotency-key'];
  return Array.isArray(value) ? value.join(', ') : value;
};

/**
 * `POST /v1/cap/<tool>` for every tool of the registry, and `GET /v1/cap` listing them. Each route
 * is tagged `capabilities` plus its access tag, and needs the scope of that name.
 */
export function capabilityRoutes(capabilities: CapabilityService): AnyRoute[] {
  const toolRoutes = capabilities.tools.map((tool) => {
    const kind = creditKindOf(tool);
    return defineRoute({
      method: 'post',
      path: `/v1/cap/${tool.name}`,
      tags: ['capabilities', scopeFor(tool)],
      scope: scopeFor(tool),
      summary: `${tool.description}${kind ? ` (charges ${kind})` : ' (free)'}`,
      // A tool that takes nothing may be called without a body.
      body: z.preprocess((value) => value ?? {}, tool.input),
      response: envelopeOf(tool.output),
      errors: tool.access === 'write' ? writeErrors : readErrors,
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
  return [
    defineRoute({
      method: 'get',
      path: '/v1/cap',
      tags: ['capabilities', 'capabilities:read'],
      scope: 'capabilities:read',
      summary: 'The mounted tools: name, tag, description, cost, and input and output JSON Schemas',
      response: CapabilityList,
      handler: async () => ({ tools: [...capabilities.describe()] }),
    }),
    ...toolRoutes,
  ];
}
