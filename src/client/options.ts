/** Where and as whom a client talks to Weft: for requests (`createWeftClient`) and event streams alike. */
export interface WeftClientOptions {
  /** Where the API listens, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** An API key (`weft_sk_…`), a user JWT or an MCP token: sent as the bearer credential. */
  token?: string;
  /** Extra headers on every request (say, `X-Correlation-Id` for one call's retries). */
  headers?: Record<string, string>;
  /** A fetch of your own (tests, proxies); the global one by default. */
  fetch?: typeof globalThis.fetch;
}
