/**
 * What the worker's codec hands a workflow instead of a payload it refuses (plaintext, another
 * workspace's, or one that does not open): `{ weftRefusedPayload: reason }`. Workflow code never sees
 * it: the workflow interceptor turns it into a non-retryable failure, so that a workflow started by
 * hand with plain JSON fails at once instead of retrying its first task forever. Pure, so that the
 * workflow bundle may import it.
 */
export const REFUSED_PAYLOAD_FIELD = 'weftRefusedPayload';

/** The failure type a workflow ends with when its input was refused. */
export const REFUSED_PAYLOAD_FAILURE = 'RefusedPayload';

/** The reason a value is the refusal placeholder, else undefined. */
export function refusedPayloadReason(value: unknown): string | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const reason = (value as Record<string, unknown>)[REFUSED_PAYLOAD_FIELD];
  return typeof reason === 'string' ? reason : undefined;
}
