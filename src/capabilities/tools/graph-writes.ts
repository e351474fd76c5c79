import type { EntityManager } from 'typeorm';
import { z } from 'zod';
import { liveNodesWithProperties } from '../../change-sets/repository';
import type { ChangeSetOperations } from '../../change-sets/schemas';
import { sameValue, stageChangeSet, stagesAgentWrites } from '../../change-sets/staging';
import {
  lockLiveEdgeLabel,
  lockLiveNode,
  softDeleteEdge,
  toEdgeResponse,
  toNodeResponse,
} from '../../graph/repository';
import { EdgeCreateRequest, EdgeResponse, NodeCreateRequest, NodeResponse } from '../../graph/schemas';
import {
  createEdgeInTransaction,
  createNodeInTransaction,
  patchNodeInTransaction,
  removeNodeInTransaction,
} from '../../graph/writes';
import { readOntologyConfig } from '../../ontology-config/service';
import { scopeOf } from '../../platform/auth/principal';
import type { UnitOfWork } from '../../platform/db/unit-of-work';
import { isRetryableCode, NotFoundError, ValidationFailedError } from '../../platform/errors';
import type { OutboxRelay } from '../../platform/outbox/relay';
import { uuidV5 } from '../../platform/uuid-v5';
import type { PromptApi } from '../../prompt/dispatcher';
import { CorrelationIdReusedError } from '../../prompt/dispatcher';
import { findPromptRunOutcomes } from '../../prompt/repository';
import { PROMPT_MAX_CHARS } from '../../prompt/schemas';
import { LIMITS } from '../../rules/limits';
import type { CapabilityCall, WriteCall } from '../define';
import { defineCapability, defineDurableCapability } from '../define';
import { keyReusedError } from '../idempotency';

const properties = z.record(z.string(), z.unknown());
const status = z
  .enum(['applied', 'staged'])
  .describe(
    '`staged`: the workspace stages agents’ writes and nothing was written; a reviewer applies the change-set.',
  );
const changeSetId = z
  .uuid()
  .nullable()
  .describe('The staged change-set (`GET /v1/ontology/change-sets/{id}`); null when applied.');

// A fixed namespace for the prompts `ontology.remember` runs (a random v4 uuid, chosen once).
const REMEMBER_NAMESPACE = '6b0e2f4c-9a13-4d57-8e2b-1c7f5a9d3e60';

/**
 * The prompt a remember call runs is named by a UUIDv5 of its workspace and Idempotency-Key: a
 * retried or concurrent call with the key attaches to the same prompt, which charges and writes
 * once. `attempt` n > 0 names the prompt run after n earlier ones failed retryably.
 */
export function rememberCorrelationId(workspaceId: string, idempotencyKey: string, attempt = 0): string {
  return uuidV5(REMEMBER_NAMESPACE, `${workspaceId}:${idempotencyKey}${attempt === 0 ? '' : `:${attempt}`}`);
}

/**
 * The prompt run this call attaches to: the key's first whose earlier attempt did not fail with a
 * "not now" refusal (`unavailable`, `rate_limited`, `timeout`), so a retry runs again rather than
 * replaying a transient failure, while any other failure stays the key's answer. After
 * LIMITS.rememberAttemptsPerKey transient failures the last one is the answer.
 */
async function rememberAttempt(m: EntityManager, workspaceId: string, key: string): Promise<string> {
  const ids = Array.from({ length: LIMITS.rememberAttemptsPerKey }, (_, attempt) =>
    rememberCorrelationId(workspaceId, key, attempt),
  );
  const outcomes = new Map((await findPromptRunOutcomes(m, ids)).map((run) => [run.correlation_id, run]));
  const transient = (id: string) => {
    const run = outcomes.get(id);
    return run?.status === 'error' && run.failure_code !== null && isRetryableCode(run.failure_code);
  };
  return ids.find((id) => !transient(id)) ?? ids.at(-1)!;
}

/** Whether this call stages instead of writing (the workspace's `staging.agent_writes`, for an agent). */
const stages = async (call: WriteCall) => stagesAgentWrites(call, (await readOntologyConfig(call.m)).staging);

const stage = (call: WriteCall, capability: string, operations: ChangeSetOperations) =>
  stageChangeSet(call.m, call.principal, { kind: 'capability', capability, call: call.idempotencyKey }, operations);

const refuse = (field: string, msg: string, type: string) =>
  new ValidationFailedError([{ loc: ['body', field], msg, type }]);

type LiveNode = { id: string; type: string; name: string };

async function liveNode(m: EntityManager, nodeId: string, field: string): Promise<LiveNode> {
  const row = await lockLiveNode(m, nodeId);
  if (!row) throw new NotFoundError({ error: 'node_not_found', node_ids: [nodeId], field });
  return row;
}

/** A staged update of `current`: its properties only, since a change-set cannot rename or retype a node. */
async function stageNodeUpdate(
  call: WriteCall,
  current: LiveNode,
  input: { type: string; name: string; properties?: Record<string, unknown> },
) {
  const [stored] = await liveNodesWithProperties(call.m, [current.id], false);
  if (input.type !== current.type) {
    throw refuse('type', 'A staged write cannot change a node’s type', 'staged_retype');
  }
  if (input.name !== current.name) {
    throw refuse('name', 'A staged write cannot rename a node', 'staged_rename');
  }
  const changes = Object.entries(input.properties ?? {}).flatMap(([key, after]) => {
    const before = stored?.properties[key] ?? null;
    return sameValue(before, after) ? [] : [{ node_ref: 'node', node_id: current.id, key, before, after }];
  });
  return stage(call, 'ontology.write_node', {
    nodes: [{ ref: 'node', node_id: current.id, type: current.type, name: current.name, properties: {} }],
    edges: [],
    property_changes: changes,
  });
}

/**
 * The graph's writes as tools (issue 40), through the graph's own write procedures (src/graph/writes.ts)
 * in the call's transaction, so the effect and the stored Idempotency-Key commit together; free like
 * their REST routes. Where the workspace stages agents' writes (`staging.agent_writes`: an MCP token's
 * call or a run's step), each call stages one change-set instead. `ontology.remember` runs the
 * prompt pipeline and is priced as an update prompt.
 */
export const graphWriteCapabilities = (deps: {
  uow: UnitOfWork;
  outbox: Pick<OutboxRelay, 'kick'>;
  promptApi: Pick<PromptApi, 'run'>;
}) => [
  defineDurableCapability({
    name: 'ontology.remember',
    access: 'write',
    durable: true,
    description:
      'Stores what a text says: the update prompt pipeline (extraction, resolution against the nodes the graph ' +
      'has, writes), or a change-set for review with `stage` or where the workspace stages agents’ writes',
    input: z.strictObject({
      text: z
        .string()
        .max(PROMPT_MAX_CHARS)
        .refine((text) => text.trim().length > 0, 'The text is empty'),
      stage: z.boolean().optional().describe('true: propose the facts as a change-set instead of writing them.'),
    }),
    output: z.object({
      status,
      nodes: z
        .array(z.object({ id: z.uuid(), type: z.string(), name: z.string(), created: z.boolean() }))
        .describe(
          'The nodes the text named: created, or existing ones it refers to (created false). Empty when staged.',
        ),
      edges: z
        .array(
          z.object({
            id: z.uuid(),
            type: z.string(),
            source_node_id: z.uuid(),
            target_node_id: z.uuid(),
            created: z.boolean(),
          }),
        )
        .describe('The edges written (a fact the graph held already is a reference of its ends, not listed).'),
      change_set_id: changeSetId,
      correlation_id: z.uuid().describe('The prompt run (its audit row) that did the work.'),
    }),
    example: { text: 'Ada Lovelace works at Analytical Engines Ltd.' },
    errors: {
      502: 'The model provider failed; nothing written, the charge refunded',
      504: 'The prompt did not finish in time; it goes on, and a retry with the key returns its result',
    },
    handler: async (call: CapabilityCall, input) => {
      const { principal } = call;
      const { staging, correlationId } = await deps.uow(scopeOf(principal), async (m) => ({
        staging: (await readOntologyConfig(m)).staging,
        correlationId: await rememberAttempt(m, principal.workspaceId, call.idempotencyKey),
      }));
      const result = await deps.promptApi
        .run(
          principal,
          {
            prompt: input.text,
            force_intent: 'update',
            prompt_kind: 'markdown_text',
            ...(input.stage || stagesAgentWrites(call, staging) ? { stage: true } : {}),
          },
          correlationId,
        )
        .catch((error: unknown) => {
          // The key's prompt holds another text (still running, or failed): the key's misuse, as /v1/cap says it.
          throw error instanceof CorrelationIdReusedError ? keyReusedError() : error;
        });
      const staged = result.change_set_id !== undefined && result.change_set_id !== null;
      return {
        result: {
          status: staged ? ('staged' as const) : ('applied' as const),
          // The pipeline lists the nodes it created before the ones it referenced.
          nodes: result.nodes.map((node, index) => ({
            id: node.id,
            type: node.type,
            name: node.name,
            created: index < result.nodes_created,
          })),
          edges: result.edges.map((edge) => ({
            id: edge.id,
            type: edge.type,
            source_node_id: edge.source_node_id,
            target_node_id: edge.target_node_id,
            created: true,
          })),
          change_set_id: result.change_set_id ?? null,
          correlation_id: result.correlation_id,
        },
        credits_charged: result.credit_receipt.amount,
      };
    },
  }),
  defineCapability({
    name: 'ontology.write_node',
    access: 'write',
    // An update overwrites the name, type and the properties it names.
    destructive: true,
    description:
      'Creates a node, or with `node_id` updates it: name and type set, properties merged (a null value removes ' +
      'a key), as POST and PATCH /v1/ontology/nodes do',
    input: z.strictObject({
      node_id: z.uuid().optional().describe('The node to update; absent: create one.'),
      type: NodeCreateRequest.shape.type,
      name: NodeCreateRequest.shape.name,
      properties: properties.optional(),
    }),
    output: z.object({
      status,
      node: NodeResponse.nullable().describe('null when staged.'),
      change_set_id: changeSetId,
    }),
    example: { type: 'person', name: 'Ada Lovelace', properties: { email: 'ada@example.org' } },
    errors: {
      404: 'node_id is not a live node of the workspace',
      422: 'Staged: a change-set cannot rename or retype a node (the field is named)',
    },
    handler: async (call, input) => {
      const { m, principal } = call;
      if (await stages(call)) {
        const staged = input.node_id
          ? await stageNodeUpdate(call, await liveNode(m, input.node_id, 'node_id'), input)
          : await stage(call, 'ontology.write_node', {
              nodes: [
                { ref: 'node', node_id: null, type: input.type, name: input.name, properties: input.properties ?? {} },
              ],
              edges: [],
              property_changes: [],
            });
        return { status: 'staged' as const, node: null, change_set_id: staged.change_set_id };
      }
      const fields = { type: input.type, name: input.name, properties: input.properties };
      const row = input.node_id
        ? await patchNodeInTransaction(m, principal.workspaceId, input.node_id, fields)
        : await createNodeInTransaction(m, principal.workspaceId, fields);
      // Its node.created or node.updated event (embedding) leaves once this commits.
      call.afterCommit(() => deps.outbox.kick(principal.workspaceId));
      return { status: 'applied' as const, node: toNodeResponse(row), change_set_id: null };
    },
  }),
  defineCapability({
    name: 'ontology.link',
    access: 'write',
    description:
      'Creates a directed, typed edge between two live nodes of the workspace, as POST /v1/ontology/edges does ' +
      '(both ends count a reference)',
    input: z.strictObject({
      source_node_id: z.uuid(),
      target_node_id: z.uuid(),
      type: EdgeCreateRequest.shape.type,
      properties: properties.optional(),
    }),
    output: z.object({
      status,
      edge: EdgeResponse.nullable().describe('null when staged.'),
      change_set_id: changeSetId,
    }),
    example: {
      source_node_id: '3f2b8c1e-6d4a-4e7b-9c2f-1a5e8d7b6c40',
      target_node_id: '9a7c5e3b-1f2d-4c6a-8b9e-0d4f2a6c8e11',
      type: 'works_at',
    },
    errors: {
      404: 'node_not_found: an end is not a live node of the workspace',
      409: 'claim_conflict: a CONTAINS edge would join two sessions’ claims',
      422: 'Staged: a change-set’s edge carries no properties',
    },
    handler: async (call, input) => {
      const { m, principal } = call;
      if (await stages(call)) {
        if (input.properties && Object.keys(input.properties).length > 0) {
          throw refuse('properties', 'A staged edge carries no properties', 'staged_edge_properties');
        }
        const source = await liveNode(m, input.source_node_id, 'source_node_id');
        const target = await liveNode(m, input.target_node_id, 'target_node_id');
        const staged = await stage(call, 'ontology.link', {
          nodes: [
            { ref: 'source', node_id: source.id, type: source.type, name: source.name, properties: {} },
            { ref: 'target', node_id: target.id, type: target.type, name: target.name, properties: {} },
          ],
          edges: [{ type: input.type, source_ref: 'source', target_ref: 'target', reasoning: null, evidence: null }],
          property_changes: [],
        });
        return { status: 'staged' as const, edge: null, change_set_id: staged.change_set_id };
      }
      const row = await createEdgeInTransaction(m, principal.workspaceId, input);
      return { status: 'applied' as const, edge: toEdgeResponse(row), change_set_id: null };
    },
  }),
  defineCapability({
    name: 'ontology.forget',
    access: 'write',
    destructive: true,
    description:
      'Soft-deletes a node (and every edge touching it) or an edge, as DELETE /v1/ontology/nodes/{id} and ' +
      '/edges/{id} do; the graph’s history keeps what it was',
    input: z
      .strictObject({
        node_id: z.uuid().optional().describe('The node to delete, with its edges.'),
        edge_id: z.uuid().optional().describe('The edge to delete.'),
      })
      .refine((body) => (body.node_id === undefined) !== (body.edge_id === undefined), {
        message: 'Give exactly one of node_id and edge_id',
        path: ['node_id'],
      }),
    output: z.object({
      status,
      node: NodeResponse.nullable().describe('The deleted node (`is_deleted: true`), for node_id; null when staged.'),
      edge: EdgeResponse.nullable().describe('The deleted edge, for edge_id; null when staged.'),
      change_set_id: changeSetId,
    }),
    example: { node_id: '8d1e4f2a-0b6c-4e3d-a5f7-2c9b1e0d7a64' },
    errors: { 404: 'No live node or edge with this id in the workspace' },
    handler: async (call, input) => {
      if (await stages(call)) {
        const deletion = input.node_id
          ? await liveNode(call.m, input.node_id, 'node_id').then((node) => ({
              kind: 'node' as const,
              id: node.id,
              label: `The node ${node.name} (${node.type})`,
            }))
          : await lockLiveEdgeLabel(call.m, input.edge_id!).then((edge) => {
              if (!edge) throw new NotFoundError('Edge not found');
              return {
                kind: 'edge' as const,
                id: input.edge_id!,
                label: `The edge ${edge.source} ${edge.type} ${edge.target}`,
              };
            });
        const staged = await stage(call, 'ontology.forget', {
          nodes: [],
          edges: [],
          property_changes: [],
          deletions: [deletion],
        });
        return { status: 'staged' as const, node: null, edge: null, change_set_id: staged.change_set_id };
      }
      if (input.node_id) {
        const node = await removeNodeInTransaction(call.m, input.node_id);
        return { status: 'applied' as const, node: toNodeResponse(node), edge: null, change_set_id: null };
      }
      const edge = await softDeleteEdge(call.m, input.edge_id!);
      if (!edge) throw new NotFoundError('Edge not found');
      return { status: 'applied' as const, node: null, edge: toEdgeResponse(edge), change_set_id: null };
    },
  }),
];
