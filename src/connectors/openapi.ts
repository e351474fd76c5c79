import type { CallFetch } from './outbound';
import { ConnectorCallError } from './outbound';
import type { HttpOperation, RemoteTool } from './tool-names';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;
/** Headers Weft sets on a call; a header parameter of the same name is not sent. */
const WEFT_HEADERS = new Set(['authorization', 'idempotency-key', 'host', 'content-length', 'content-type']);
type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Resolves the document's local `$ref`s (`#/components/…`); a cycle or a remote reference is a problem. */
function dereference(doc: Json, value: unknown, problems: string[], depth = 0): unknown {
  if (depth > 32) {
    problems.push('a schema nests too deep (a $ref cycle?)');
    return {};
  }
  if (Array.isArray(value)) return value.map((item) => dereference(doc, item, problems, depth + 1));
  if (!isObject(value)) return value;
  if (typeof value.$ref === 'string') {
    const ref = value.$ref;
    if (!ref.startsWith('#/')) {
      problems.push(`'${ref}' is not a reference inside the document`);
      return {};
    }
    let target: unknown = doc;
    for (const part of ref.slice(2).split('/')) {
      target = isObject(target) ? target[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    }
    if (target === undefined) {
      problems.push(`'${ref}' points at nothing`);
      return {};
    }
    return dereference(doc, target, problems, depth + 1);
  }
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, dereference(doc, item, problems, depth + 1)]),
  );
}

/** The document's first server URL, made absolute against nothing (a relative one is no base). */
export function firstServer(doc: Json): string | undefined {
  const servers = Array.isArray(doc.servers) ? doc.servers : [];
  const url = isObject(servers[0]) ? servers[0].url : undefined;
  return typeof url === 'string' && /^https?:\/\//.test(url) ? url : undefined;
}

/**
 * Every operation with an `operationId` as a tool: its input joins the path, query and header
 * parameters (by name) and the JSON request body (as `body`); GET and HEAD are read-only.
 */
export function operationsOf(doc: Json): { tools: RemoteTool[] } | { problems: string[] } {
  const problems: string[] = [];
  if (typeof doc.openapi !== 'string' || !/^3\.[01]\./.test(doc.openapi)) {
    return { problems: ['not an OpenAPI 3.0 or 3.1 document (its `openapi` field)'] };
  }
  if (!isObject(doc.paths)) return { problems: ['the document has no `paths`'] };
  const tools: RemoteTool[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!isObject(item)) continue;
    const shared = Array.isArray(item.parameters) ? item.parameters : [];
    for (const method of METHODS) {
      const operation = item[method];
      if (!isObject(operation) || typeof operation.operationId !== 'string') continue;
      const own = Array.isArray(operation.parameters) ? operation.parameters : [];
      const properties: Json = {};
      const required: string[] = [];
      const params: HttpOperation['params'] = [];
      for (const raw of [...shared, ...own]) {
        const param = dereference(doc, raw, problems) as Json;
        const where = param.in;
        if (typeof param.name !== 'string' || (where !== 'path' && where !== 'query' && where !== 'header')) continue;
        params.push({ name: param.name, in: where });
        properties[param.name] = {
          ...(isObject(param.schema) ? param.schema : { type: 'string' }),
          ...(typeof param.description === 'string' ? { description: param.description } : {}),
        };
        if (param.required === true || where === 'path') required.push(param.name);
      }
      const content = isObject(operation.requestBody)
        ? (dereference(doc, operation.requestBody, problems) as Json).content
        : undefined;
      const json = isObject(content) ? content['application/json'] : undefined;
      const body = isObject(json) && isObject(json.schema);
      if (body) {
        properties.body = json.schema;
        if ((operation.requestBody as Json).required === true) required.push('body');
      }
      tools.push({
        remoteName: operation.operationId,
        description: String(operation.summary ?? operation.description ?? `${method.toUpperCase()} ${path}`).slice(
          0,
          1024,
        ),
        inputSchema: { type: 'object', properties, ...(required.length ? { required } : {}) },
        readOnly: method === 'get' || method === 'head',
        http: { method: method.toUpperCase(), path, params, body },
      });
    }
  }
  if (problems.length > 0) return { problems };
  if (tools.length === 0) return { problems: ['no operation has an operationId'] };
  return { tools };
}

/**
 * One operation's request: path parameters substituted, query and header ones set, the body as
 * JSON, the idempotency key as `Idempotency-Key`. A 2xx answers `{status, body}`; any other
 * status is a failed call `remote_error` with the status and the start of the answer.
 */
export async function callOperation(
  baseUrl: string,
  headers: Record<string, string>,
  call: CallFetch,
  operation: HttpOperation,
  input: Json,
  idempotencyKey: string,
): Promise<Json> {
  let path = operation.path;
  const url = new URL(baseUrl.replace(/\/?$/, '/'));
  const query = new URLSearchParams();
  const sent: Record<string, string> = { ...headers, 'idempotency-key': idempotencyKey, accept: 'application/json' };
  for (const param of operation.params) {
    const value = input[param.name];
    if (value === undefined) continue;
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    if (param.in === 'path') path = path.replace(`{${param.name}}`, encodeURIComponent(text));
    else if (param.in === 'query') query.append(param.name, text);
    else if (!WEFT_HEADERS.has(param.name.toLowerCase())) sent[param.name.toLowerCase()] = text;
  }
  // Set last: no input may replace the connector's credentials or the call's key.
  Object.assign(sent, headers, { 'idempotency-key': idempotencyKey });
  const target = new URL(path.replace(/^\//, ''), url);
  target.search = query.toString();
  const hasBody = operation.body && input.body !== undefined;
  if (hasBody) sent['content-type'] = 'application/json';
  const response = await call.fetch(target, {
    method: operation.method,
    headers: sent,
    ...(hasBody ? { body: JSON.stringify(input.body) } : {}),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // Not JSON: the text as it came.
  }
  if (!response.ok) throw new ConnectorCallError('remote_error', text.slice(0, 300) || 'No body', response.status);
  return { status: response.status, body };
}
