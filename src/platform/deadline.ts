/**
 * Waits for `work` at most `ms`: true once it settled, false when the time ran out first (it goes on in
 * the background). For follow-ups after a commit (a wake, a start, a schedule's apply) whose durable path
 * (the outbox, a re-check) takes over when Temporal is slow: the caller answers without waiting longer.
 */
export async function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true), expired]);
  } finally {
    clearTimeout(timer);
  }
}
