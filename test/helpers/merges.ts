import { WorkflowNotFoundError } from '@temporalio/client';
import { expect } from 'chai';
import type { BootstrapResult } from '../../src/tenancy/service';
import { eventually } from './eventually';
import { as } from './http';
import { getStack } from './stack';

/** Waits for `resolve-<node_id>` to exist (the outbox starts it after the commit), then for its result. */
export async function resolved(
  nodeId: string,
): Promise<{ status: string; pendingCandidateIds: string[]; autoMergedCandidateId: string | null }> {
  const handle = getStack().runtime.temporal.client.workflow.getHandle(`resolve-${nodeId}`);
  await eventually(
    async () => {
      try {
        await handle.describe();
        return true;
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) return undefined;
        throw error;
      }
    },
    { what: `resolve-${nodeId} to start` },
  );
  return handle.result();
}

/** A node created over HTTP, as its 201 answered it. */
export async function createNode(
  t: BootstrapResult,
  type: string,
  name: string,
  properties: Record<string, unknown> = {},
) {
  const response = await as(t.api_key).post('/v1/ontology/nodes', { type, name, properties });
  expect(response.status, response.text).to.equal(201);
  return response.body as { id: string; reference_count: number };
}

/** A person node whose resolver pass has finished. */
export async function createPerson(
  t: BootstrapResult,
  name: string,
  properties: Record<string, unknown> = {},
  type = 'person',
) {
  const node = await createNode(t, type, name, properties);
  return { ...node, result: await resolved(node.id) };
}

/** An edge created over HTTP. */
export async function createEdge(t: BootstrapResult, type: string, source: string, target: string) {
  const response = await as(t.api_key).post('/v1/ontology/edges', {
    type,
    source_node_id: source,
    target_node_id: target,
  });
  expect(response.status, response.text).to.equal(201);
  return response.body as { id: string };
}
