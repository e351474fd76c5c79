import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import type { CreditKind } from '../../rules/costs';
import type { Authenticator } from '../auth/authenticator';
import type { Principal } from '../auth/principal';
import type { ScopeName } from '../auth/scopes';
import { ForbiddenError } from '../errors';
import { answerCheck } from './answer-check';
import { assertCleanInput } from './clean-input';
import { HttpError, validationError } from './errors';
import type { RateLimiter } from './rate-limit';
import { answerWritePosition, placeRequestReads } from './read-placement';
import { mayRecall, serveRecalled } from './recall';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type AnyObject = z.ZodObject<z.ZodRawShape>;

/** What a handler receives: validated input, and the caller when the route is authenticated. */
export interface RouteInput<P, Q, B, Auth> {
  params: P;
  query: Q;
  body: B;
  auth: Auth;
  ctx: Context;
}

/** How a caller proves who it is; each kind is one security scheme of the OpenAPI document. */
export type CredentialKind = 'api_key' | 'user_jwt' | 'mcp_token' | 'operator_token' | 'webhook_signature';

/** A response header as the OpenAPI document states it. */
export interface ResponseHeader {
  description: string;
  schema: { type: 'string'; enum?: readonly string[] };
}

/** A documented outcome besides success: what it means, and its body when that is not `{detail}`. */
export type RouteOutcome = string | { description: string; body: z.ZodType };

interface RouteFields<
  P extends AnyObject | undefined,
  Q extends AnyObject | undefined,
  B extends z.ZodType | undefined,
  R extends z.ZodType | undefined,
  Public extends boolean,
> {
  method: Method;
  /** OpenAPI-style path, e.g. `/v1/ontology/nodes/{node_id}`. */
  path: string;
  /**
   * Stable camelCase name of the operation, unique across the API (checked at start-up). Generated
   * clients name their methods after it, so renaming one breaks them.
   */
  operationId: string;
  summary: string;
  /**
   * What the operation does and its limits, for the reference and generated clients. Interpolate
   * `LIMITS` rather than retyping numbers; credits and scope are appended from `credits` and `scope`.
   */
  description: string;
  tags: readonly string[];
  /** Routes are authenticated unless `public`; `scope` additionally requires that scope. */
  public?: Public;
  scope?: ScopeName;
  /**
   * Which credentials the route takes (documentation). Defaults: none for a public route; for an
   * authenticated one an API key, a user JWT, and an MCP token unless the scope is one MCP tokens never carry.
   */
  credentials?: readonly CredentialKind[];
  /** The credit kinds the operation may charge: documents its price and its 402. */
  credits?: readonly CreditKind[];
  params?: P;
  query?: Q;
  /** Request headers the handler reads itself (documentation only: an Idempotency-Key, say). */
  headers?: AnyObject;
  body?: B;
  /** How many calls the parsed body carries, each counted by the rate limiter (default 1). */
  calls?: (body: B extends z.ZodType ? z.infer<B> : undefined) => number;
  /**
   * A write that may start from a remembered principal, as every JSON read does (issue 27): only for a
   * handler whose every effect goes through a unit of work or a scoped read, which carry and await the
   * credential's proof (credential-proof.ts). An idempotent replay is then one statement.
   */
  recallable?: boolean;
  /**
   * The route only reads, and may read from the standby when one is configured (DATABASE_REPLICA_URL,
   * src/platform/db/standby.ts); never for a read under a lock or a charge.
   */
  reads?: 'standby';
  status?: number;
  response?: R;
  /** Headers of the success response besides the trace headers (documentation only). */
  responseHeaders?: Record<string, ResponseHeader>;
  /**
   * The request body is read by the handler as raw bytes, in any of these media types (the JSON
   * parser leaves the route alone; documented by `contentMediaType`). `examples` gives a media type its
   * own example (a form body for a form type), else `example` stands for all.
   */
  rawBody?: {
    mediaTypes: readonly string[];
    description: string;
    example: string;
    examples?: Readonly<Record<string, string>>;
  };
  /**
   * The success body's media types when it is not JSON (documentation only); or media type → schema
   * when the handler writes the body itself rather than returning it (`POST /mcp`).
   */
  produces?: string | readonly string[] | Readonly<Record<string, z.ZodType>>;
  /**
   * Route-specific outcomes: status → description (or description and body). The statuses every
   * route of its kind can return (401, 403, 404 for `workspace_id`, 413, 422, 429 …) are added by
   * the document builder; an entry here for one of those refines its description.
   */
  errors?: Partial<Record<number, RouteOutcome>>;
  // A method signature, so that every route is assignable to the erased AnyRoute (bivariant input).
  handler(
    input: RouteInput<
      P extends AnyObject ? z.infer<P> : Record<string, never>,
      Q extends AnyObject ? z.infer<Q> : Record<string, never>,
      B extends z.ZodType ? z.infer<B> : undefined,
      Public extends true ? undefined : Principal
    >,
  ): Promise<(R extends z.ZodType ? z.input<R> : unknown) | RouteAnswer>;
}

/**
 * An answer other than the route's success, with a body that is not `{detail}` (a webhook intake's
 * 401 carries `{delivery_id, reason}`): sent as is; its shape is the one the route's `errors` documents.
 */
export class RouteAnswer {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {}
}

/** A route; one with a body carries a request example, checked against the body schema at start-up. */
export type RouteSpec<
  P extends AnyObject | undefined,
  Q extends AnyObject | undefined,
  B extends z.ZodType | undefined,
  R extends z.ZodType | undefined,
  Public extends boolean,
> = RouteFields<P, Q, B, R, Public> & (B extends z.ZodType ? { example: z.input<B> } : { example?: never });

// The spec's generic parameters vary per route; the registry only needs this erased view.
export type AnyRoute = RouteFields<any, any, any, any, any> & { example?: unknown };

/** Declares a route; the identity function exists to infer the handler's types from the schemas. */
export function defineRoute<
  P extends AnyObject | undefined = undefined,
  Q extends AnyObject | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
  R extends z.ZodType | undefined = undefined,
  Public extends boolean = false,
>(spec: RouteSpec<P, Q, B, R, Public>): RouteSpec<P, Q, B, R, Public> {
  return spec;
}

/** Koa's router takes `:name` where OpenAPI takes `{name}`. */
export const toKoaPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');

// Lower case, as Postgres prints uuids, so that the credential's own workspace compares equal in any case.
const WorkspaceQuery = z.object({ workspace_id: z.uuid().transform((id) => id.toLowerCase()) });

function parse<T extends z.ZodType>(schema: T, value: unknown, part: 'body' | 'query' | 'path'): z.infer<T> {
  assertCleanInput(value, part);
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(part, result.error);
  return result.data;
}

/** The media types a route with a `body` takes (koa-body parses these and no others); another answers 415. */
export const JSON_MEDIA_TYPES: readonly string[] = ['application/json'];

/**
 * A body sent as anything but JSON would reach validation as `undefined` and answer a puzzling 422;
 * clients expect 415 naming what the route takes. A request without a body is left to validation,
 * so a route whose body is optional still takes a bare POST.
 */
function assertJsonBody(ctx: Context): void {
  // fetch sends a bodiless POST with `Content-Length: 0`, which type-is counts as a body.
  if (!ctx.get('Transfer-Encoding') && !ctx.request.length) return;
  if (ctx.is([...JSON_MEDIA_TYPES])) return;
  const sent = ctx.get('Content-Type') || 'none';
  throw new HttpError(415, `Content-Type ${sent} is not accepted; send ${JSON_MEDIA_TYPES.join(' or ')}`);
}

/** koa-body's limit for JSON bodies; larger ones answer 413. */
export const JSON_BODY_LIMIT = '1mb';

const OPERATION_ID = /^[a-z][a-zA-Z0-9]*$/;

/**
 * Refuses, at start-up, a route list the OpenAPI document could not describe well: a missing,
 * non-camelCase or duplicate operationId, an empty description, a body without a valid example.
 */
export function assertRoutesDocumented(routes: readonly AnyRoute[]): void {
  const seen = new Map<string, string>();
  for (const route of routes) {
    const name = `${route.method.toUpperCase()} ${route.path}`;
    const id: unknown = route.operationId;
    if (typeof id !== 'string' || !OPERATION_ID.test(id)) throw new Error(`${name}: operationId must be camelCase`);
    const other = seen.get(id);
    if (other) throw new Error(`operationId ${id} is used twice: ${other} and ${name}`);
    seen.set(id, name);
    if (!route.description?.trim()) throw new Error(`${name}: description is empty`);
    if (route.body) {
      const example = (route.body as z.ZodType).safeParse(route.example);
      if (!example.success) throw new Error(`${name}: the request example does not match the body schema`);
    }
  }
}

/**
 * Mounts routes on a Koa router: authenticate (401) → rate limit (429) → scope (403) → validate path, query and
 * media type (415) and body (422) → resolve the workspace the caller asked for (404) → handler → shape the response.
 */
export function mountRoutes(
  router: Router,
  routes: readonly AnyRoute[],
  guards: { authenticator: Authenticator; rateLimiter?: RateLimiter; validateResponses?: boolean; standby?: boolean },
): void {
  const { authenticator, rateLimiter, validateResponses = true, standby = false } = guards;
  assertRoutesDocumented(routes);
  /**
   * A refused credential (401) counts against its source address, and an address past its
   * allowance is turned away with 429 before its next credential is looked up (review L-5).
   */
  const guarded = <T>(ctx: Context, attempt: () => Promise<T>): Promise<T> =>
    rateLimiter ? rateLimiter.guardAuthentication(ctx.ip, attempt) : attempt();
  for (const route of routes) {
    const respond = route.response
      ? answerCheck(
          route.response as z.ZodType,
          `response of ${route.method.toUpperCase()} ${route.path}`,
          validateResponses,
        )
      : undefined;
    /** Validates the request, runs the handler and shapes its answer, as `principal`. */
    const serve = async (ctx: Context, caller: Principal | undefined) => {
      const principal = caller && standby ? placeRequestReads(ctx, caller, route.reads === 'standby') : caller;
      const params = route.params ? parse(route.params, ctx.params, 'path') : {};
      const query = route.query ? parse(route.query, ctx.query, 'query') : {};
      if (route.body) assertJsonBody(ctx);
      const body = route.body ? parse(route.body, (ctx.request as { body?: unknown }).body, 'body') : undefined;
      // A request that carries several calls (an MCP JSON-RPC batch) counts each of them.
      const calls = principal && route.calls ? route.calls(body) : 1;
      if (principal && calls > 1) await rateLimiter?.take(principal.credential, principal.userId, calls - 1);
      // Set first so that a handler may still choose another status (readiness answers 503).
      ctx.status = route.status ?? 200;
      const result = await route.handler({ params, query, body, auth: principal, ctx });
      if (principal && standby) answerWritePosition(ctx, principal);
      if (result instanceof RouteAnswer) {
        ctx.status = result.status;
        ctx.body = result.body;
      } else if (respond) ctx.body = respond(result);
      else if (result !== undefined) ctx.body = result;
    };
    const recalls = mayRecall(route);
    router[route.method](toKoaPath(route.path), async (ctx) => {
      if (route.public) return serve(ctx, undefined);
      // knowledge-graph-service-api.md §5.2: a workspace_id parameter must name a workspace the caller belongs to.
      // It is honoured on every authenticated route, so no route can forget the check.
      const requested =
        ctx.query.workspace_id === undefined ? undefined : parse(WorkspaceQuery, ctx.query, 'query').workspace_id;
      const recalled =
        recalls && authenticator.recall ? await guarded(ctx, () => authenticator.recall!(ctx, requested)) : undefined;
      /** Serves as `principal`, when it holds the route's scope. */
      const serveScoped = async (principal: Principal) => {
        if (route.scope && !principal.scopes.has(route.scope)) throw new ForbiddenError(`Missing scope ${route.scope}`);
        await serve(ctx, principal);
      };
      if (recalled && (!route.scope || recalled.principal.scopes.has(route.scope))) {
        const guards = { guarded: <T>(attempt: () => Promise<T>) => guarded(ctx, attempt), rateLimiter };
        return serveRecalled(ctx, recalled, guards, (principal) => serve(ctx, principal), serveScoped);
      }
      const principal = await guarded(ctx, () => authenticator.authenticate(ctx, requested));
      // Every authenticated request counts, refused ones included, so probing scopes costs too.
      await rateLimiter?.take(principal.credential, principal.userId);
      await serveScoped(principal);
    });
  }
}
