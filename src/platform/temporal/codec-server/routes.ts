import type { Payload, PayloadCodec } from '@temporalio/common';
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
    summary: 'Decrypt Temporal payloads (codec server protocol)',
    tags: ['temporal'],
    scope: 'temporal:decode',
    body: CodecPayloads,
    response: CodecPayloads,
    errors: { 400: 'A payload does not open with any configured key', 403: 'Missing scope temporal:decode' },
    handler: ({ body }) => run(() => codec.decode(fromJson(body))),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/temporal-codec/encode',
    summary: 'Encrypt Temporal payloads (codec server protocol), say for a signal sent from the UI',
    tags: ['temporal'],
    scope: 'temporal:decode',
    body: CodecPayloads,
    response: CodecPayloads,
    errors: { 403: 'Missing scope temporal:decode' },
    handler: ({ body }) => run(() => codec.encode(fromJson(body))),
  }),
];
