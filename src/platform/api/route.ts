import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import type { Principal } from '../auth/principal';
import type { ScopeName } from '../auth/scopes';
import { ForbiddenError, ValidationFailedError } from '../errors';
import { validationError } from './errors';

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

export interface RouteSpec<
  P extends AnyObject | undefined,
  Q extends AnyObject | undefined,
  B extends z.ZodType | undefined,
  R extends z.ZodType | undefined,
  Public extends boolean,
> {
  method: Method;
  /** OpenAPI-style path, e.g. `/v1/ontology/nodes/{node_id}`. */
  path: string;
  summary: string;
  tags: string[];
  /** Routes are authenticated unless `public`; `scope` additionally requires that scope. */
  public?: Public;
  scope?: ScopeName;
  params?: P;
  query?: Q;
  body?: B;
  status?: number;
  response?: R;
  /** The success body's media type when it is not JSON (documentation only). */
  produces?: string;
  /** Other documented outcomes: status → description. */
  errors?: Record<number, string>;
  handler: (
    input: RouteInput<
      P extends AnyObject ? z.infer<P> : Record<string, never>,
      Q extends AnyObject ? z.infer<Q> : Record<string, never>,
      B extends z.ZodType ? z.infer<B> : undefined,
      Public extends true ? undefined : Principal
    >,
  ) => Promise<R extends z.ZodType ? z.input<R> : unknown>;
}

// The spec's generic parameters vary per route; the registry only needs this erased view.
export type AnyRoute = RouteSpec<any, any, any, any, any>;

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

export interface Authenticator {
  authenticate(ctx: Context, requestedWorkspaceId: string | undefined): Promise<Principal>;
}

// Lower case, as Postgres prints uuids, so that the credential's own workspace compares equal in any case.
const WorkspaceQuery = z.object({ workspace_id: z.uuid().transform((id) => id.toLowerCase()) });

/** Postgres stores no NUL character in text or jsonb; refuse it at the door (422), not as a 500. */
function assertNoNul(value: unknown, part: 'body' | 'query' | 'path', path: (string | number)[] = []): void {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) {
      throw new ValidationFailedError([
        { loc: [part, ...path], msg: 'NUL characters are not allowed', type: 'string_nul' },
      ]);
    }
  } else if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) assertNoNul(item, part, [...path, index]);
  } else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      assertNoNul(key, part, [...path, key]);
      assertNoNul(item, part, [...path, key]);
    }
  }
}

function parse<T extends z.ZodType>(schema: T, value: unknown, part: 'body' | 'query' | 'path'): z.infer<T> {
  assertNoNul(value, part);
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(part, result.error);
  return result.data;
}

/** A response that fails its own schema is Weft's bug: a 500, never a 422 about the client's body. */
function shapeResponse(route: AnyRoute, result: unknown): unknown {
  const shaped = (route.response as z.ZodType).safeParse(result);
  if (shaped.success) return shaped.data;
  throw new Error(
    `response of ${route.method.toUpperCase()} ${route.path} does not match its schema: ${shaped.error.message}`,
  );
}

/**
 * Mounts routes on a Koa router: authenticate (401) → scope (403) → validate path, query and
 * body (422) → resolve the workspace the caller asked for (404) → handler → shape the response.
 */
export function mountRoutes(router: Router, routes: readonly AnyRoute[], authenticator: Authenticator): void {
  for (const route of routes) {
    router[route.method](toKoaPath(route.path), async (ctx) => {
      let principal: Principal | undefined;
      if (!route.public) {
        // Contract 5.2: a workspace_id parameter must name a workspace the caller belongs to.
        // It is honoured on every authenticated route, so no route can forget the check.
        const requested =
          ctx.query.workspace_id === undefined ? undefined : parse(WorkspaceQuery, ctx.query, 'query').workspace_id;
        principal = await authenticator.authenticate(ctx, requested);
        if (route.scope && !principal.scopes.has(route.scope)) throw new ForbiddenError(`Missing scope ${route.scope}`);
      }
      const params = route.params ? parse(route.params, ctx.params, 'path') : {};
      const query = route.query ? parse(route.query, ctx.query, 'query') : {};
      const body = route.body ? parse(route.body, (ctx.request as { body?: unknown }).body, 'body') : undefined;
      // Set first so that a handler may still choose another status (readiness answers 503).
      ctx.status = route.status ?? 200;
      const result = await route.handler({ params, query, body, auth: principal, ctx });
      if (route.response) ctx.body = shapeResponse(route, result);
      else if (result !== undefined) ctx.body = result;
    });
  }
}
