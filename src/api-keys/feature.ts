import { Credential, CredentialDailyUsage } from './entities';
import { apiKeyRoutes } from './routes';
import type { ApiKeyService } from './service';

/** API keys and their daily usage. */
export const apiKeysFeature = {
  name: 'api-keys',
  tags: {
    'api-keys': 'The caller’s API keys: create, list, revoke, usage. Secrets are shown once.',
  },
  entities: [Credential, CredentialDailyUsage],
  routes: (runtime: { services: { apiKeys: ApiKeyService } }) => apiKeyRoutes(runtime.services.apiKeys),
};
