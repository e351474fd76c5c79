import type { OutboxHandler } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { isPersonType } from './person-rules';
import { personResolverWorkflow } from './workflow';

/**
 * `node.created` → the person resolver, for person-type nodes only (see person-rules.ts). The
 * workflow id is `resolve-<node_id>` and a finished run is not repeated (only a failed one is),
 * so redelivering the event starts nothing new.
 */
export const startPersonResolver =
  (temporal: TemporalHandle): OutboxHandler =>
  async (event) => {
    const nodeId = typeof event.payload.node_id === 'string' ? event.payload.node_id : event.aggregate_id;
    const type = event.payload.type;
    if (typeof type !== 'string' || !isPersonType(type)) return;
    await temporal.workflows.start(personResolverWorkflow, { workspaceId: event.workspace_id, nodeId });
  };
