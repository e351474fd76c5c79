import { expect } from 'chai';
import type { BootstrapResult } from '../../src/tenancy/service';
import { as } from './http';
import { getStack } from './stack';
import { startedWorkflow } from './workflows';

/** Waits for `resolve-<node_id>` to start, then for its result. */
export async function resolved(
  nodeId: string,
): Promise<{ status: string; pendingCandidateIds: string[]; autoMergedCandidateId: string | null }> {
  await startedWorkflow(`resolve-${nodeId}`);
  return getStack().runtime.temporal.client.workflow.getHandle(`resolve-${nodeId}`).result();
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
