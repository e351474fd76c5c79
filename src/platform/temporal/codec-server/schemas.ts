import { z } from 'zod';
import { LIMITS } from '../../../rules/limits';

// Proto3 JSON of `bytes`: base64, standard or URL-safe, padding optional.
const Bytes = z
  .string()
  .regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'Expected base64')
  .describe('base64');

const PayloadJson = z
  .object({
    metadata: z.record(z.string().max(200), Bytes).optional().describe('Metadata values, base64'),
    data: Bytes.optional(),
  })
  .meta({ id: 'TemporalPayload' });

/** Temporal's codec server protocol: a `Payloads` message in proto3 JSON, in and out. */
export const CodecPayloads = z
  .object({ payloads: z.array(PayloadJson).max(LIMITS.temporalCodecPayloads) })
  .meta({ id: 'TemporalPayloads' });
export type CodecPayloads = z.infer<typeof CodecPayloads>;

/**
 * What a caller sends. Proto3 JSON omits an empty list, so the CLI's `temporal workflow metadata` and
 * `stack` send `{}`: no payloads.
 */
export const CodecPayloadsRequest = z
  .object({ payloads: z.array(PayloadJson).max(LIMITS.temporalCodecPayloads).default([]) })
  .meta({ id: 'TemporalPayloadsRequest' });
