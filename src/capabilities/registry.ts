import { agentCapabilities } from '../agents/capabilities';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { AnyCapability } from './define';
import { billingCapabilities } from './tools/billing';

export interface CapabilityDeps {
  uow: UnitOfWork;
  outbox: Pick<OutboxRelay, 'kick'>;
  sessionTtlSeconds: number;
}

/**
 * Every capability, declared once: the `/v1/cap` routes, the runs' step executor and the MCP tool
 * list all read this list (through the capability service).
 */
export function allCapabilities(deps: CapabilityDeps): AnyCapability[] {
  return [...agentCapabilities(deps), ...billingCapabilities(deps)];
}
