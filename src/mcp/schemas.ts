import { z } from 'zod';

const JsonRpcErrorObject = z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() });

/**
 * One JSON-RPC 2.0 message as the Streamable HTTP transport takes it: a request (`method` and
 * `id`), a notification (`method` only) or a response (`result` or `error`). The SDK checks each
 * method's params. JSON-RPC defines no other member: one is a 422 in the contract's shape, like any
 * body the API does not know.
 */
const JsonRpcMessage = z.strictObject({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string().max(200), z.number().int()]).optional(),
  method: z.string().min(1).max(200).optional(),
  params: z.record(z.string(), z.unknown()).optional(),
  result: z.record(z.string(), z.unknown()).optional(),
  error: JsonRpcErrorObject.optional(),
});

export const McpRequestBody = z
  .union([JsonRpcMessage, z.array(JsonRpcMessage).min(1).max(20)])
  .describe(
    'A JSON-RPC 2.0 message of the Model Context Protocol (`initialize`, `tools/list`, `tools/call`, ' +
      '`resources/read`, …), or a batch of them from clients of protocol version 2025-03-26.',
  )
  .meta({ id: 'McpMessage' });

export const JsonRpcErrorBody = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number(), z.null()]),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }),
  })
  .meta({ id: 'JsonRpcError' });

const JsonRpcResult = z.looseObject({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string(), z.number(), z.null()]),
  result: z.record(z.string(), z.unknown()).optional(),
  error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
});

export const McpResponseBody = z
  .union([JsonRpcResult, z.array(JsonRpcResult)])
  .describe('The JSON-RPC response (or, for a batch, responses): a `result`, or an `error` for a protocol error.')
  .meta({ id: 'McpResponse' });
