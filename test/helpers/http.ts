import { responseValidator } from './openapi-validator';
import { getStack } from './stack';

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

/**
 * Real HTTP against the running app; `token` becomes the bearer credential. Every response is
 * checked against the OpenAPI document (status declared, body matches its schema): a mismatch throws.
 */
export async function request<T = any>(
  method: string,
  path: string,
  options: {
    token?: string;
    body?: unknown;
    rawBody?: string | Buffer;
    headers?: Record<string, string>;
    baseUrl?: string;
  } = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | Buffer | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${options.baseUrl ?? getStack().baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  if ((response.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
  (await responseValidator(getStack().baseUrl)).check({
    method,
    path,
    status: response.status,
    contentType: response.headers.get('content-type'),
    text,
    body: parsed,
  });
  return { status: response.status, body: parsed as T, headers: response.headers, text };
}

/** A client bound to one credential (and, for a second stack, its base URL). */
export const as = (token: string, baseUrl?: string) => ({
  get: <T = any>(path: string) => request<T>('GET', path, { token, baseUrl }),
  delete: <T = any>(path: string) => request<T>('DELETE', path, { token, baseUrl }),
  post: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) =>
    request<T>('POST', path, { token, body, baseUrl, headers }),
  patch: <T = any>(path: string, body?: unknown) => request<T>('PATCH', path, { token, body, baseUrl }),
  put: <T = any>(path: string, body?: unknown) => request<T>('PUT', path, { token, body, baseUrl }),
});

/** A form POST (the OAuth endpoints speak OAuth, not the API's JSON): its status and JSON answer. */
export const postForm = (baseUrl: string, path: string, body: Record<string, string>) =>
  fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(body),
  }).then(async (response) => ({ status: response.status, body: (await response.json()) as any }));
