import { BurstyRateLimiter, RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { CredentialRef } from '../auth/principal';
import type { Config } from '../config';
import { RateLimitedError } from '../errors';

/** The reserve of RATE_LIMIT_BURST requests refills once per this window. */
const BURST_WINDOW_SECONDS = 60;

export interface RateLimiter {
  /** Counts one request of `credential`; throws RateLimitedError (429, Retry-After) past the limit. */
  take(credential: CredentialRef, userId: string): Promise<void>;
}

/** One bucket per credential: a key, an MCP token, or a user JWT (by its jti, else by its user). */
const bucketOf = (credential: CredentialRef, userId: string): string =>
  credential.id ? `${credential.kind}:${credential.id}` : `user:${userId}`;

/**
 * Per-credential limits in this process (rate-limiter-flexible's memory store): RATE_LIMIT_RPS
 * requests in each second, and when a second's allowance is spent, a reserve of RATE_LIMIT_BURST
 * requests per minute. Undefined when RATE_LIMIT_RPS is 0 (no limit).
 */
export function createRateLimiter(
  config: Pick<Config, 'RATE_LIMIT_RPS' | 'RATE_LIMIT_BURST'>,
): RateLimiter | undefined {
  if (config.RATE_LIMIT_RPS === 0) return undefined;
  const perSecond = new RateLimiterMemory({ keyPrefix: 'rps', points: config.RATE_LIMIT_RPS, duration: 1 });
  const limiter =
    config.RATE_LIMIT_BURST > 0
      ? new BurstyRateLimiter(
          perSecond,
          new RateLimiterMemory({
            keyPrefix: 'burst',
            points: config.RATE_LIMIT_BURST,
            duration: BURST_WINDOW_SECONDS,
          }),
        )
      : perSecond;
  return {
    async take(credential, userId) {
      try {
        await limiter.consume(bucketOf(credential, userId));
      } catch (refusal) {
        // The library rejects with its result object when the limit is reached, with an Error otherwise.
        if (!(refusal instanceof RateLimiterRes)) throw refusal;
        throw new RateLimitedError(Math.max(1, Math.ceil(refusal.msBeforeNext / 1000)));
      }
    },
  };
}
