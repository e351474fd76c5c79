import type { Payload, PayloadCodec } from '@temporalio/common';
import { LIMITS } from '../../../limits';
import { defineRoute } from '../../api/route';
import { BadRequestError } from '../../errors';
import { PayloadDecryptionError } from '../codec';
import { CodecPayloads } from './schemas';

const fromJson = (body: CodecPayloads): Payload[] =>
  body.payloads.map((payload) => ({
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
    ),
    data: Buffer.from(payload.data ?? '', 'base64'),
  }));

const toJson = (payloads: Payload[]): CodecPayloads => ({
  payloads: payloads.map((payload) => ({
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
    ),
    data: Buffer.from(payload.data ?? []).toString('base64'),
  })),
});

async function run(work: () => Promise<Payload[]>): Promise<CodecPayloads> {
  try {
    return toJson(await work());
  } catch (error) {
    if (error instanceof PayloadDecryptionError) throw new BadRequestError(error.message);
    throw error;
  }
}

/**
 * Temporal's codec server protocol (the Temporal UI's "codec endpoint", the CLI's `--codec-endpoint`),
 * so that an operator holding a `temporal:decode` credential can read the payloads that histories
 * hold encrypted. The key decrypts every workspace's payloads: the scope is an operator's, never
 * an MCP token's. Browser calls from the UI are allowed by `codecCors` for TEMPORAL_UI_ORIGIN.
 */
export const temporalCodecRoutes = (codec: PayloadCodec) => [
  defineRoute({
    method: 'post',
    path: '/v1/temporal-codec/decode',
    operationId: 'decodeTemporalPayloads',
    summary: 'Decrypt Temporal payloads (codec server protocol)',
    description:
      'Temporal’s codec server protocol: encrypted payloads in, plaintext payloads out, for the Temporal UI ' +
      `and CLI (\`--codec-endpoint\`). At most ${LIMITS.temporalCodecPayloads} payloads per request; ` +
      'an operator scope.',
    tags: ['temporal'],
    credentials: ['api_key', 'user_jwt'],
    example: { payloads: [{ metadata: { encoding: 'YmluYXJ5L2VuY3J5cHRlZA==' }, data: 'AAAA' }] },
    scope: 'temporal:decode',
    body: CodecPayloads,
    response: CodecPayloads,
    errors: { 400: 'A payload does not open with any configured key', 403: 'Missing scope temporal:decode' },
    handler: ({ body }) => run(() => codec.decode(fromJson(body))),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/temporal-codec/encode',
    operationId: 'encodeTemporalPayloads',
    summary: 'Encrypt Temporal payloads (codec server protocol), say for a signal sent from the UI',
    description:
      'The inverse of decode: plaintext payloads in, payloads encrypted with the current key out. ' +
      `At most ${LIMITS.temporalCodecPayloads} payloads per request; an operator scope.`,
    tags: ['temporal'],
    credentials: ['api_key', 'user_jwt'],
    example: { payloads: [{ metadata: { encoding: 'YmluYXJ5L2VuY3J5cHRlZA==' }, data: 'AAAA' }] },
    scope: 'temporal:decode',
    body: CodecPayloads,
    response: CodecPayloads,
    errors: { 403: 'Missing scope temporal:decode' },
    handler: ({ body }) => run(() => codec.encode(fromJson(body))),
  }),
];
