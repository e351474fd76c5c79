import type { ApiTag } from '../platform/openapi/tags';
import { Credential, CredentialDailyUsage } from './entities';
import { apiKeyRoutes } from './routes';
import type { ApiKeyService } from './service';

/** API keys and their daily usage. */
export const apiKeysFeature = {
  name: 'api-keys',
  tags: ['api-keys'] satisfies ApiTag[],
  entities: [Credential, CredentialDailyUsage],
  routes: (runtime: { services: { apiKeys: ApiKeyService } }) => apiKeyRoutes(runtime.services.apiKeys),
};
