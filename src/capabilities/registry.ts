import { agentCapabilities } from '../agents/capabilities';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { PromptService } from '../prompt/service';
import { runCapabilities } from '../runs/capabilities';
import type { SearchService } from '../search/service';
import type { AnyCapability } from './define';
import { billingCapabilities } from './tools/billing';
import { ontologyCapabilities } from './tools/ontology';

export interface CapabilityDeps {
  uow: UnitOfWork;
  outbox: Pick<OutboxRelay, 'kick'>;
  sessionTtlSeconds: number;
  prompts: PromptService;
  search: SearchService;
}

/**
 * Every capability, declared once: the `/v1/cap` routes, the runs' step executor and the MCP tool
 * list all read this list (through the capability service).
 */
export function allCapabilities(deps: CapabilityDeps): AnyCapability[] {
  return [
    ...agentCapabilities(deps),
    ...runCapabilities(deps),
    ...ontologyCapabilities(deps),
    ...billingCapabilities(deps),
  ];
}
