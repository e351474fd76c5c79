import type { RateLimiter } from '../../api/rate-limit';
import type { ApiTag } from '../../openapi/tags';
import type { CodecRouteDeps } from './routes';
import { temporalCodecRoutes } from './routes';

/** The codec server for the Temporal UI and CLI: platform, but it serves routes, so it describes itself too. */
export const temporalCodecFeature = {
  name: 'temporal-codec',
  tags: ['temporal'] satisfies ApiTag[],
  routes: (
    runtime: Omit<CodecRouteDeps, 'codec' | 'rateLimiter'> & { temporal: { codec: CodecRouteDeps['codec'] } },
    rateLimiter?: RateLimiter,
  ) =>
    temporalCodecRoutes({
      codec: runtime.temporal.codec,
      authenticator: runtime.authenticator,
      dataSource: runtime.dataSource,
      config: runtime.config,
      rateLimiter,
    }),
};
