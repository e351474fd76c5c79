export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface EventuallyOptions {
  /** What the test waits for, for the timeout's message. */
  what?: string;
  timeoutMs?: number;
  intervalMs?: number;
}

/**
 * Polls `probe` until it returns something other than `undefined` (or `false`), and returns that.
 * The one poll loop of the suite: asynchronous effects (outbox deliveries, workflows, embeddings)
 * are awaited through it, never through a fixed sleep.
 */
export async function eventually<T>(
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  options: EventuallyOptions = {},
): Promise<T> {
  const { what = 'a condition', timeoutMs = 15_000, intervalMs = 100 } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}
