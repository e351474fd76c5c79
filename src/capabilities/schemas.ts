import { z } from 'zod';

/** knowledge-graph-service-api.md §4.2: what every capability call answers. */
export const envelopeOf = <O extends z.ZodType>(result: O) =>
  z.object({
    result,
    credits_charged: z
      .number()
      .int()
      .min(0)
      .describe('Credits the call charged, net of any refund; a replay repeats the first answer and charges nothing.'),
    idempotency_key: z.string().describe('The Idempotency-Key sent, or the one the server generated.'),
  });

export interface Envelope<T = unknown> {
  result: T;
  credits_charged: number;
  idempotency_key: string;
}

export const CapabilityDescription = z
  .object({
    name: z.string(),
    tag: z.enum(['capabilities:read', 'capabilities:write']),
    description: z.string(),
    cost: z.number().int().min(0).describe('Credits charged per call.'),
    credit_kind: z.string().nullable().describe('The ledger kind of the charge; null for a free tool.'),
    idempotent: z.boolean().describe('Write tools replay a repeated Idempotency-Key; read tools cache nothing.'),
    input_schema: z.record(z.string(), z.unknown()).describe('JSON Schema of the request body.'),
    output_schema: z.record(z.string(), z.unknown()).describe('JSON Schema of the envelope’s result.'),
  })
  .meta({ id: 'CapabilityDescription' });
export type CapabilityDescription = z.infer<typeof CapabilityDescription>;

export const CapabilityList = z.object({ tools: z.array(CapabilityDescription) }).meta({ id: 'CapabilityList' });
