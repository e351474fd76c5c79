import { z } from 'zod';

const JsonRpcId = z.union([z.string(), z.number().int(), z.null()]);

/**
 * One A2A JSON-RPC 2.0 request, as `POST /a2a` takes it (documentation: the handler reads the raw
 * bytes, so that bad JSON, a batch or an unknown method is a JSON-RPC error rather than an HTTP one).
 */
export const A2ARequestBody = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: JsonRpcId.optional(),
    method: z
      .string()
      .describe(
        'A2A 1.0: `SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask`, ' +
          '`CreateTaskPushNotificationConfig`, `GetTaskPushNotificationConfig`, `ListTaskPushNotificationConfigs`, ' +
          '`DeleteTaskPushNotificationConfig`; with `A2A-Version: 0.3` (or no header and a 0.3 name): ' +
          '`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`, ' +
          '`tasks/pushNotificationConfig/set|get|list|delete`.',
      ),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .describe('An A2A JSON-RPC request (A2A 1.0 as `@a2a-js/sdk` 1.3 speaks it, or 0.3).')
  .meta({ id: 'A2ARequest' });

export const A2AResponseBody = z
  .looseObject({
    jsonrpc: z.literal('2.0'),
    id: JsonRpcId,
    result: z.unknown().optional().describe('A `Task` (`{task}` for SendMessage), a push config, or null.'),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
  })
  .describe(
    'The JSON-RPC response: a `result`, or an `error` (-32700 parse, -32600 invalid request, -32601 unknown ' +
      'method, -32602 invalid params, -32001 task not found, -32002 not cancelable, -32004 unsupported, -32009 ' +
      'version not supported, -32000 a Weft refusal such as a missing scope or separation of duties).',
  )
  .meta({ id: 'A2AResponse' });

export const A2AStreamEvent = z
  .looseObject({ jsonrpc: z.literal('2.0'), id: JsonRpcId, result: z.unknown() })
  .describe(
    'One SSE `data:` of a stream: a JSON-RPC response whose result is a `StreamResponse` (`task`, ' +
      '`statusUpdate` or `artifactUpdate`). Its `id:` is the run event it came from (resume with Last-Event-ID).',
  )
  .meta({ id: 'A2AStreamEvent' });

export const AgentCardBody = z
  .looseObject({
    name: z.string(),
    description: z.string(),
    supportedInterfaces: z.array(
      z.looseObject({ url: z.string(), protocolBinding: z.string(), protocolVersion: z.string() }),
    ),
    version: z.string(),
    capabilities: z.looseObject({ streaming: z.boolean(), pushNotifications: z.boolean() }),
    securitySchemes: z.record(z.string(), z.unknown()),
    skills: z.array(z.looseObject({ id: z.string(), name: z.string(), description: z.string() })),
  })
  .describe('The A2A Agent Card (A2A 1.0 JSON).')
  .meta({ id: 'AgentCard' });
