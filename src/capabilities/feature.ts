import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import type { PromptService } from '../prompt/service';
import type { SearchService } from '../search/service';
import { CapabilityIdempotencyKey } from './entities';
import { capabilityRoutes } from './routes';
import type { CapabilityService } from './service';
import { billingCapabilities } from './tools/billing';
import { ontologyCapabilities } from './tools/ontology';
import { capabilityKeyPurgeWorkflow } from './workflow';

/**
 * The capability registry's edge (`/v1/cap`) and its general tools. Other features declare their
 * own tools in their manifests; src/app/capabilities.ts puts these general ones last.
 */
export const capabilitiesFeature = {
  name: 'capabilities',
  tags: {
    capabilities: 'Agent tools mounted as POST /v1/cap/<tool-name>, with idempotency and a credit envelope.',
    'capabilities:read': 'Capabilities that only read.',
    'capabilities:write': 'Capabilities that change state; replayable with an Idempotency-Key.',
  },
  entities: [CapabilityIdempotencyKey],
  routes: (runtime: { services: { capabilities: CapabilityService } }) =>
    capabilityRoutes(runtime.services.capabilities),
  capabilities: (deps: { uow: UnitOfWork; prompts: PromptService; search: SearchService }) => [
    ...ontologyCapabilities(deps),
    ...billingCapabilities(deps),
  ],
  schedules: [
    {
      name: 'capability-key-purge',
      description:
        'Hourly: deletes capability Idempotency-Keys older than the 24-hour replay window, and stored ' +
        'code-index batches older than 24 hours.',
      workflow: capabilityKeyPurgeWorkflow,
      args: [{}],
      spec: { intervals: [{ every: '1 hour' }] },
    },
  ] satisfies MaintenanceSchedule[],
};
