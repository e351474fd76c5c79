import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { AnyCapability } from './define';
import { billingCapabilities } from './tools/billing';

/** Every capability, declared once: the `/v1/cap` routes, runs' steps and the MCP tool list all read this list. */
export function allCapabilities(deps: { uow: UnitOfWork }): AnyCapability[] {
  return [...billingCapabilities(deps)];
}
