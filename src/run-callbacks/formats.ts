/** How a callback's body is written: Weft's envelope, or an A2A push notification (issue 42). */
export const CALLBACK_FORMATS = ['weft', 'a2a'] as const;
export type CallbackFormat = (typeof CALLBACK_FORMATS)[number];

/** What an A2A push config asks the sender to present to its receiver (A2A `TaskPushNotificationConfig`). */
export interface ReceiverAuth {
  token: string;
  authentication: { scheme: string; credentials: string } | null;
}

/**
 * A body format other than Weft's own: the exact body to POST for a stored Weft callback body (the
 * envelope `notify.ts` writes, `{id, type, created_at, data}`), and its content type. Pure and
 * deterministic, so every attempt and the delivery's REST view show the same bytes.
 */
export interface CallbackBodyFormat {
  contentType: string;
  render(weftBody: string): string;
}

/**
 * The headers an A2A push notification sender presents (as `@a2a-js/sdk`'s
 * DefaultPushNotificationSender does): `authentication` with credentials → `Authorization: <scheme>
 * <credentials>`; otherwise a `token` → `X-A2A-Notification-Token`.
 */
export function receiverHeaders(auth: ReceiverAuth | null): Record<string, string> {
  if (!auth) return {};
  if (auth.authentication?.scheme && auth.authentication.credentials) {
    return { authorization: `${auth.authentication.scheme} ${auth.authentication.credentials}` };
  }
  return auth.token ? { 'x-a2a-notification-token': auth.token } : {};
}
