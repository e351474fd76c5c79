import OpenAI from 'openai';
import { DomainError } from '../errors';

export type UpstreamReason = 'timeout' | 'connection' | 'http_error' | 'rate_limited' | 'invalid_response';

/**
 * A model or embedding provider failed (HTTP error, timeout, unreachable, nonsense answer). The API
 * answers 502 with a user-safe body; the provider's own text stays in the logs. Callers that
 * reserved credits refund them when this is thrown.
 */
export class UpstreamError extends DomainError {
  constructor(
    readonly provider: string,
    readonly reason: UpstreamReason,
    readonly upstreamStatus?: number,
    options?: { cause?: unknown },
  ) {
    super('upstream_unavailable', { error: 'upstream_unavailable', provider, reason }, { cause: options?.cause });
  }
}

/** Classifies anything the `openai` client throws; already-classified errors pass through. */
export function toUpstreamError(error: unknown, provider = 'openai'): UpstreamError {
  if (error instanceof UpstreamError) return error;
  if (error instanceof OpenAI.APIConnectionTimeoutError)
    return new UpstreamError(provider, 'timeout', undefined, { cause: error });
  if (error instanceof OpenAI.APIConnectionError)
    return new UpstreamError(provider, 'connection', undefined, { cause: error });
  if (error instanceof OpenAI.APIError) {
    const reason = error.status === 429 ? 'rate_limited' : 'http_error';
    return new UpstreamError(provider, reason, error.status, { cause: error });
  }
  return new UpstreamError(provider, 'invalid_response', undefined, { cause: error });
}

/** Runs one provider call and turns every failure into an UpstreamError. */
export async function callProvider<T>(provider: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw toUpstreamError(error, provider);
  }
}
