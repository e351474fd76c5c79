import {
  A2A_ERROR_CODE,
  A2AError,
  JsonRpcTransportError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import { DomainError, ValidationFailedError } from '../platform/errors';

/**
 * JSON-RPC's server-error range (-32000 to -32099) holds A2A's own codes from -32001; Weft answers a
 * refusal A2A has no code for (a missing scope, separation of duties, no credits, a rate limit) with
 * -32000 and the REST API's detail, so a client learns why without an HTTP status.
 */
export const WEFT_REFUSAL_CODE = -32000;

const detailText = (detail: unknown): string => {
  if (typeof detail === 'string') return detail;
  const { error, message } = (detail ?? {}) as { error?: unknown; message?: unknown };
  if (typeof error === 'string' && typeof message === 'string') return `${error}: ${message}`;
  if (typeof error === 'string') return error;
  return JSON.stringify(detail).slice(0, 500);
};

const refusal = (message: string) =>
  new JsonRpcTransportError({ jsonrpc: '2.0', id: null, error: { code: WEFT_REFUSAL_CODE, message } });

/**
 * A Weft domain error as the A2A error a client expects: another workspace's or an unknown run is
 * TaskNotFound (never data), a bad input is invalid params, a finished run is not cancelable. Any
 * other error is Weft's fault: `internal` hears it, the client gets -32603 without its text (raw
 * database or SDK text never reaches a client).
 */
export function toA2AError(
  error: unknown,
  operation: 'cancel' | 'other' = 'other',
  internal: (error: unknown) => void = () => {},
): unknown {
  if (error instanceof A2AError) return error;
  if (!(error instanceof DomainError)) {
    internal(error);
    return new JsonRpcTransportError({
      jsonrpc: '2.0',
      id: null,
      error: { code: A2A_ERROR_CODE.INTERNAL_ERROR, message: 'Internal error' },
    });
  }
  if (error instanceof ValidationFailedError) {
    const issue = error.issues[0];
    return new RequestMalformedError(issue ? `${issue.loc.join('.')}: ${issue.msg}` : 'Invalid parameters');
  }
  switch (error.code) {
    case 'not_found':
      return new TaskNotFoundError(detailText(error.detail));
    case 'bad_request':
      return new RequestMalformedError(detailText(error.detail));
    case 'conflict':
      return operation === 'cancel'
        ? new TaskNotCancelableError(detailText(error.detail))
        : new UnsupportedOperationError(detailText(error.detail));
    default:
      return refusal(detailText(error.detail));
  }
}

/** Runs `work`, answering a Weft domain error as its A2A error (and any other as an internal one). */
export async function asA2A<T>(
  work: () => Promise<T>,
  operation: 'cancel' | 'other' = 'other',
  internal?: (error: unknown) => void,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw toA2AError(error, operation, internal);
  }
}
