import { RateLimiterMemory } from 'rate-limiter-flexible';
import { retryAfterSeconds } from '../platform/api/rate-limit';
import { RateLimitedError } from '../platform/errors';
import type { Logger } from '../platform/logger';
import { LIMITS } from '../rules/limits';

/** Requests per window; 0 turns that limit off. */
export interface IntakeRates {
  perSlug: number;
  perSource: number;
  redeliveriesPerTrigger: number;
}

const WINDOW_SECONDS = LIMITS.webhook.intake.windowSeconds;

function limiter(prefix: string, points: number) {
  return points > 0 ? new RateLimiterMemory({ keyPrefix: prefix, points, duration: WINDOW_SECONDS }) : undefined;
}

async function take(bucket: RateLimiterMemory | undefined, key: string): Promise<number | null> {
  if (!bucket) return null;
  try {
    await bucket.consume(key);
    return null;
  } catch (refusal) {
    return retryAfterSeconds(refusal);
  }
}

/**
 * The webhook intake's own limits (review H-3), counted in this process before the body is read:
 * per source address, then per slug, each a fixed window of `windowSeconds`. A refusal is a
 * RateLimitedError (429 with Retry-After). Refusals are counted per trigger without a write per
 * request: they add up in memory by slug (at most `refusalSlugs` of them) and are flushed to the
 * triggers' counters in one statement at most once per `refusalFlushMs`, however many were refused.
 * Also limits redelivery per trigger (review M-2).
 */
export function createIntakeLimiter(deps: {
  rates: IntakeRates;
  /** Adds refusals to the triggers with these slugs (one statement; a slug of no trigger changes nothing). */
  countRefusals: (counts: ReadonlyMap<string, number>) => Promise<void>;
  logger: Logger;
}) {
  const sources = limiter('intake-source', deps.rates.perSource);
  const slugs = limiter('intake-slug', deps.rates.perSlug);
  const redeliveries = limiter('redeliver', deps.rates.redeliveriesPerTrigger);
  let refused = new Map<string, number>();
  let flushing: NodeJS.Timeout | undefined;

  async function flush() {
    flushing = undefined;
    if (refused.size === 0) return;
    const batch = refused;
    refused = new Map();
    await deps.countRefusals(batch).catch((error: unknown) => {
      deps.logger.warn({ err: error, slugs: batch.size }, 'could not count the intake’s rate-limit refusals');
    });
  }

  function countRefusal(slug: string) {
    // Bounded: past this many distinct slugs in one interval, further ones go uncounted (still refused).
    if (!refused.has(slug) && refused.size >= LIMITS.webhook.intake.refusalSlugs) return;
    refused.set(slug, (refused.get(slug) ?? 0) + 1);
    if (!flushing) {
      flushing = setTimeout(() => void flush(), LIMITS.webhook.intake.refusalFlushMs);
      flushing.unref();
    }
  }

  return {
    /** Admits one intake request for `slug` from `source`, or throws RateLimitedError. */
    async admit(slug: string, source: string): Promise<void> {
      const retry = (await take(sources, source)) ?? (await take(slugs, slug));
      if (retry === null) return;
      countRefusal(slug);
      throw new RateLimitedError(retry, 'Too many webhook requests; retry after Retry-After seconds');
    },
    /** Admits one redelivery of a trigger, or throws RateLimitedError. */
    async admitRedelivery(triggerId: string): Promise<void> {
      const retry = await take(redeliveries, triggerId);
      if (retry !== null) throw new RateLimitedError(retry, 'Too many redeliveries of this trigger; retry later');
    },
    /** Writes the refusals counted so far (tests, and shutdown). */
    async flush(): Promise<void> {
      if (flushing) clearTimeout(flushing);
      await flush();
    },
  };
}

export type IntakeLimiter = ReturnType<typeof createIntakeLimiter>;
