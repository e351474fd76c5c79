import type { UnitOfWork } from '../platform/db/unit-of-work';
import { Credential, CredentialDailyUsage } from './entities';
import { apiKeyRoutes } from './routes';
import type { ApiKeyService } from './service';
import { createApiKeyService } from './service';
import type { UsageRecorder } from './usage-recorder';

/** API keys and their daily usage. */
export const apiKeysFeature = {
  name: 'api-keys',
  services: {
    apiKeys: (ctx: { uow: UnitOfWork; usage: UsageRecorder }) => createApiKeyService(ctx),
  },
  tags: {
    'api-keys': 'The caller’s API keys: create, list, revoke, usage. Secrets are shown once.',
  },
  entities: [Credential, CredentialDailyUsage],
  routes: (runtime: { services: { apiKeys: ApiKeyService } }) => apiKeyRoutes(runtime.services.apiKeys),
};
