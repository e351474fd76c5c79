import { nodeCreated } from '../graph/events';
import type { OutboxHandler } from '../platform/outbox/relay';
import { onEvent } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { isPersonType } from './person-rules';
import { personResolverWorkflow } from './workflow';

/**
 * `node.created` → the person resolver, for person-type nodes only (see person-rules.ts). The
 * workflow id is `resolve-<node_id>` and a finished run is not repeated (only a failed one is),
 * so redelivering the event starts nothing new.
 */
export const startPersonResolver = (temporal: TemporalHandle): OutboxHandler<typeof nodeCreated> =>
  onEvent(nodeCreated, async (event) => {
    if (!isPersonType(event.payload.type)) return;
    await temporal.workflows.start(personResolverWorkflow, {
      workspaceId: event.workspace_id,
      nodeId: event.payload.node_id,
    });
  });
