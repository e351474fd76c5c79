import type { RateLimiter } from '../../api/rate-limit';
import type { CodecRouteDeps } from './routes';
import { temporalCodecRoutes } from './routes';

/** The codec server for the Temporal UI and CLI: platform, but it serves routes, so it describes itself too. */
export const temporalCodecFeature = {
  name: 'temporal-codec',
  tags: {
    temporal: 'Operator tools for Temporal: the codec server that decrypts workflow payloads for the UI and CLI.',
  },
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
