import { z } from 'zod';
import type { RateLimiter } from '../platform/api/rate-limit';
import { defineRoute } from '../platform/api/route';
import type { Authenticator } from '../platform/auth/authenticator';
import { ForbiddenError } from '../platform/errors';
import { LIMITS } from '../rules/limits';
import type { WaitpointService } from './waitpoints';
import { WAITPOINT_TOKEN_MARKER } from './waitpoints';

const timestamp = z.iso.datetime({ offset: true });
const WaitpointStatus = z.enum(['waiting', 'completed', 'timed_out', 'cancelled']);

export const Waitpoint = z
  .object({
    waitpoint_id: z.uuid(),
    execution_id: z.uuid().describe('The run whose step waits on it.'),
    step_no: z.number().int(),
    kind: z
      .enum(['sleep', 'event', 'run'])
      .describe('`sleep` (`run.sleep`), `event` (`run.wait_for`: completed here), `run` (`runs.wait`).'),
    name: z.string().nullable(),
    status: WaitpointStatus,
    output_schema: z.record(z.string(), z.unknown()).nullable(),
    output: z.unknown().describe('The completion’s output (a `run` waitpoint: the awaited run’s outcome).'),
    awaited_execution_id: z.uuid().nullable(),
    expires_at: timestamp.nullable().describe('When a sleep ends or a wait times out.'),
    created_at: timestamp,
    completed_at: timestamp.nullable(),
  })
  .meta({ id: 'Waitpoint' });

const WaitpointList = z.object({ waitpoints: z.array(Waitpoint) });
const WaitpointListQuery = z.object({
  status: WaitpointStatus.optional(),
  execution_id: z.uuid().optional().describe('Only the waitpoints of this run.'),
  limit: z.coerce.number().int().min(1).max(LIMITS.runs.waits.list.max).default(LIMITS.runs.waits.list.default),
});
const WaitpointParams = z.object({ waitpoint_id: z.uuid() });
const CompleteWaitpointRequest = z.strictObject({
  output: z.unknown().describe('Checked against the waitpoint’s `output_schema`; the step’s output carries it.'),
});

const bearer = (header: string | undefined) => /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];

/** `GET /v1/waitpoints` and `POST /v1/waitpoints/{id}/complete` (issue 40 item 3). */
export const waitpointRoutes = (waitpoints: WaitpointService, authenticator: Authenticator, limiter?: RateLimiter) => [
  defineRoute({
    method: 'get',
    path: '/v1/waitpoints',
    operationId: 'listWaitpoints',
    summary: 'The waitpoints runs wait on (`run.sleep`, `run.wait_for`, `runs.wait`), newest first',
    description:
      '`status=waiting` lists what runs wait for now; `execution_id` keeps one run’s. Never shows a token. ' +
      `At most ${LIMITS.runs.waits.list.max} (default ${LIMITS.runs.waits.list.default}).`,
    tags: ['runs'],
    scope: 'runs:read',
    query: WaitpointListQuery,
    response: WaitpointList,
    handler: ({ auth, query }) => waitpoints.list(auth, query),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/waitpoints/{waitpoint_id}/complete',
    operationId: 'completeWaitpoint',
    summary: 'Complete a `run.wait_for` waitpoint: its run goes on with `output`',
    description:
      'Completes a waiting `event` waitpoint (made by a run’s `run.wait_for` step) with `output`, which must ' +
      'satisfy its `output_schema`; the run’s step succeeds with it and the run goes on. Authorised by a ' +
      'credential with `runs:write` in the waitpoint’s workspace, or by the waitpoint’s own one-time token ' +
      `(\`Authorization: Bearer ${WAITPOINT_TOKEN_MARKER}…\`, from the step’s output or its \`waitpoint.created\` ` +
      'event), so an outside system needs no API key; the token completes that waitpoint only.',
    tags: ['runs'],
    // Authenticated here, not by the router: a waitpoint token is no credential of the workspace.
    public: true,
    credentials: ['api_key', 'user_jwt', 'mcp_token'],
    params: WaitpointParams,
    body: CompleteWaitpointRequest,
    example: { output: { approved: true, invoice: 'INV-1042' } },
    response: Waitpoint,
    errors: {
      401: 'No credential, or one that is not valid',
      403: 'The credential lacks runs:write',
      404: 'waitpoint_not_found: no such waitpoint in the workspace (or not the token’s)',
      409:
        'waitpoint_not_waiting (completed, timed out or cancelled already: a token works once) or ' +
        'waitpoint_not_completable (a sleep or a `runs.wait` completes by itself)',
      422: 'The output fails the waitpoint’s `output_schema` (`loc` under `body.output`)',
    },
    handler: async ({ params, body, ctx }) => {
      const token = bearer(ctx.get('authorization'));
      if (token?.startsWith(WAITPOINT_TOKEN_MARKER)) {
        const attempt = () => waitpoints.completeWithToken(token, params.waitpoint_id, body.output);
        return limiter ? limiter.guardAuthentication(ctx.ip, attempt) : attempt();
      }
      const requested = typeof ctx.query.workspace_id === 'string' ? ctx.query.workspace_id : undefined;
      const authenticate = () => authenticator.authenticate(ctx, requested);
      const principal = await (limiter ? limiter.guardAuthentication(ctx.ip, authenticate) : authenticate());
      await limiter?.take(principal.credential, principal.userId);
      if (!principal.scopes.has('runs:write')) throw new ForbiddenError('Missing scope runs:write');
      return waitpoints.complete(principal, params.waitpoint_id, body.output);
    },
  }),
];
