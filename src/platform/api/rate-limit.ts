import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { BurstyRateLimiter, RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { CredentialRef } from '../auth/principal';
import type { Config } from '../config';
import { RateLimitedError, UnauthenticatedError } from '../errors';

/** The reserve of RATE_LIMIT_BURST requests refills once per this window. */
const BURST_WINDOW_SECONDS = 60;
/** RATE_LIMIT_AUTH_FAILURES refused credentials per source address in this window. */
const AUTH_FAILURE_WINDOW_SECONDS = 60;

export interface RateLimiter {
  /**
   * Counts `points` requests of `credential` (one per request, plus one per further call of an MCP
   * batch); throws RateLimitedError (429, Retry-After) past the limit.
   */
  take(credential: CredentialRef, userId: string, points?: number): Promise<void>;
  /**
   * Authenticates with `attempt` under the allowance of refused credentials per source address:
   * RateLimitedError at once when `address` has spent it (a prober is turned away before its next
   * credential costs a database lookup), and each UnauthenticatedError counted against it.
   */
  guardAuthentication<T>(address: string, attempt: () => Promise<T>): Promise<T>;
}

/** One bucket per credential: a key, an MCP token, or a user JWT (by its jti, else by its user). */
const bucketOf = (credential: CredentialRef, userId: string): string =>
  credential.id ? `${credential.kind}:${credential.id}` : `user:${userId}`;

/**
 * The seconds until a refused request may try again. The library rejects with its result object
 * when the limit is reached, with an Error otherwise: that one is rethrown.
 */
export function retryAfterSeconds(refusal: unknown): number {
  if (!(refusal instanceof RateLimiterRes)) throw refusal;
  return Math.max(1, Math.ceil(refusal.msBeforeNext / 1000));
}

const refused = (refusal: unknown): never => {
  throw new RateLimitedError(retryAfterSeconds(refusal));
};

/**
 * Limits in this process (rate-limiter-flexible's memory store). Per credential: RATE_LIMIT_RPS
 * requests in each second, and when a second's allowance is spent, a reserve of RATE_LIMIT_BURST
 * requests per minute. Per source address: RATE_LIMIT_AUTH_FAILURES refused credentials (401) per
 * minute, since a request that authenticates as no one has no credential bucket to count in
 * (review L-5). Undefined when both are 0 (no limit).
 */
export function createRateLimiter(
  config: Pick<Config, 'RATE_LIMIT_RPS' | 'RATE_LIMIT_BURST' | 'RATE_LIMIT_AUTH_FAILURES'>,
): RateLimiter | undefined {
  if (config.RATE_LIMIT_RPS === 0 && config.RATE_LIMIT_AUTH_FAILURES === 0) return undefined;
  let perCredential: RateLimiterAbstract | BurstyRateLimiter | undefined;
  if (config.RATE_LIMIT_RPS > 0) {
    const perSecond = new RateLimiterMemory({ keyPrefix: 'rps', points: config.RATE_LIMIT_RPS, duration: 1 });
    perCredential =
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
  }
  const failures =
    config.RATE_LIMIT_AUTH_FAILURES > 0
      ? new RateLimiterMemory({
          keyPrefix: 'auth-failures',
          points: config.RATE_LIMIT_AUTH_FAILURES,
          duration: AUTH_FAILURE_WINDOW_SECONDS,
        })
      : undefined;
  return {
    async take(credential, userId, points = 1) {
      if (perCredential) await perCredential.consume(bucketOf(credential, userId), points).catch(refused);
    },
    async guardAuthentication(address, attempt) {
      if (!failures) return attempt();
      const spent = await failures.get(address);
      if (spent && spent.consumedPoints >= failures.points) refused(spent);
      try {
        return await attempt();
      } catch (error) {
        if (error instanceof UnauthenticatedError) await failures.consume(address).catch(refused);
        throw error;
      }
    },
  };
}
