import type { EntityManager } from 'typeorm';
import { defineCapability } from '../capabilities/define';
import type { ChangeSetOperations } from '../change-sets/schemas';
import { stageChangeSet, stagesAgentWrites } from '../change-sets/staging';
import { readOntologyConfig } from '../ontology-config/service';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { OutboxRelay } from '../platform/outbox/relay';
import * as schemas from './schemas';
import * as agents from './service';

const actorOf = (principal: Principal): agents.Actor => ({
  workspaceId: principal.workspaceId,
  userId: principal.userId,
});

const sessionErrors = {
  403: 'not_session_owner: the session belongs to another user of the workspace',
  404: 'session_not_found: no such session in the workspace',
};

/**
 * The `agent.*` tools (knowledge-graph-service-api.md §4.2): sessions, claims, findings and failure clusters. All free.
 * Write tools run in the capability call's transaction (`call.m`); reads take a unit of work.
 */
export const agentCapabilities = (deps: {
  uow: UnitOfWork;
  outbox: Pick<OutboxRelay, 'kick'>;
  sessionTtlSeconds: number;
}) => {
  const read = <T>(principal: Principal, work: (m: EntityManager) => Promise<T>) => deps.uow(scopeOf(principal), work);

  return [
    defineCapability({
      name: 'agent.start_session',
      access: 'write',
      description: 'Opens a task session; heartbeat, claim and end calls reference its session_id',
      input: schemas.StartSessionInput,
      output: schemas.StartSessionOutput,
      example: { name: 'refactor billing module', metadata: { model: 'example-agent', repo: 'weft' } },
      handler: ({ m, principal }, input) => agents.startSession(m, actorOf(principal), input, deps.sessionTtlSeconds),
    }),
    defineCapability({
      name: 'agent.heartbeat',
      access: 'write',
      description: 'Stamps a heartbeat on an active session; already_inactive=true means stop heartbeating',
      input: schemas.SessionRef,
      output: schemas.HeartbeatOutput,
      example: { session_id: '3f2b8c1e-6a47-4d2b-9c1e-5b7a0d4e8f21' },
      errors: { ...sessionErrors },
      handler: ({ m, principal }, input) => agents.heartbeat(m, actorOf(principal), input.session_id),
    }),
    defineCapability({
      name: 'agent.end_session',
      access: 'write',
      description:
        'Ends a session with its outcome and abandons its active claims; idempotent. ' +
        'A failure with an error_signature joins a failure cluster',
      input: schemas.EndSessionInput,
      output: schemas.EndSessionOutput,
      repeatSafe: true,
      example: {
        session_id: '3f2b8c1e-6a47-4d2b-9c1e-5b7a0d4e8f21',
        outcome: 'failed',
        error_signature: 'TypeError: x is undefined at src/a.ts:12',
      },
      errors: { ...sessionErrors },
      handler: async ({ m, principal, afterCommit }, input) => {
        const { failed, ...ended } = await agents.endSession(m, actorOf(principal), input);
        if (failed) afterCommit(() => deps.outbox.kick(principal.workspaceId));
        return ended;
      },
    }),
    defineCapability({
      name: 'agent.claim_work',
      access: 'write',
      description:
        'Claims a node for a session. Conflicts (409, naming the holder) with another session’s active claim on ' +
        'the node, an ancestor or a descendant through CONTAINS edges; ' +
        'a re-claim by the same session updates the intent',
      input: schemas.ClaimWorkInput,
      output: schemas.ClaimWorkOutput,
      example: {
        session_id: '3f2b8c1e-6a47-4d2b-9c1e-5b7a0d4e8f21',
        target_node_id: '8d1e4f2a-0b6c-4e3d-a5f7-2c9b1e0d7a64',
        intent: 'refactor the retry loop',
      },
      errors: {
        ...sessionErrors,
        404: 'session_not_found, or node_not_found: the target is not a live node of the workspace',
        409: 'claim_conflict (another session holds the node, an ancestor or a descendant), or session_inactive',
      },
      handler: ({ m, principal }, input) => agents.claimWork(m, actorOf(principal), input),
    }),
    defineCapability({
      name: 'agent.release_claim',
      access: 'write',
      description: 'Releases an active claim; only its opener may (403). Idempotent on released or abandoned claims',
      input: schemas.ReleaseClaimInput,
      output: schemas.ReleaseClaimOutput,
      repeatSafe: true,
      example: { claim_id: '5a7c9e1b-2d4f-4a6c-8e0b-1f3d5b7a9c2e' },
      errors: { 403: 'not_claim_owner: only the user who opened the claim may release it', 404: 'claim_not_found' },
      handler: ({ m, principal }, input) => agents.releaseClaim(m, actorOf(principal), input.claim_id),
    }),
    defineCapability({
      name: 'agent.list_active_claims',
      access: 'read',
      description: 'Active claims, newest first, optionally of one session and/or one target; unscoped, at most 200',
      input: schemas.ListActiveClaimsInput,
      output: schemas.ListActiveClaimsOutput,
      example: { target_node_id: '8d1e4f2a-0b6c-4e3d-a5f7-2c9b1e0d7a64' },
      errors: { 404: 'node_not_found: `target_node_id` is not a live node of the workspace' },
      handler: ({ principal }, input) => read(principal, (m) => agents.listActiveClaims(m, input)),
    }),
    defineCapability({
      name: 'agent.record_finding',
      access: 'write',
      description:
        'Attaches a finding (an agent.finding node linked by FINDING_OF) to a live code.* node; another type is ' +
        '422. Where the workspace stages agents’ writes, an MCP token’s call or a run’s step stages a change-set ' +
        'instead',
      input: schemas.RecordFindingInput,
      output: schemas.RecordFindingOutput,
      example: {
        target_node_id: '8d1e4f2a-0b6c-4e3d-a5f7-2c9b1e0d7a64',
        severity: 'high',
        kind: 'bug',
        title: 'Retry loop never backs off',
        session_id: '3f2b8c1e-6a47-4d2b-9c1e-5b7a0d4e8f21',
      },
      errors: { 404: 'node_not_found (the target), or session_not_found' },
      handler: async ({ m, principal, afterCommit, idempotencyKey, runId }, input) => {
        const { staging } = await readOntologyConfig(m);
        const stage = stagesAgentWrites({ principal, runId }, staging)
          ? {
              stage: (operations: ChangeSetOperations) =>
                stageChangeSet(
                  m,
                  principal,
                  { kind: 'capability', capability: 'agent.record_finding', call: idempotencyKey },
                  operations,
                ),
            }
          : undefined;
        const recorded = await agents.recordFinding(m, actorOf(principal), input, stage);
        // The finding node's node.created event (embedding) leaves once this commits.
        afterCommit(() => deps.outbox.kick(principal.workspaceId));
        return recorded;
      },
    }),
    defineCapability({
      name: 'agent.get_findings',
      access: 'read',
      description: 'Findings, newest first, optionally of one target and/or one severity; unscoped, at most 200',
      input: schemas.GetFindingsInput,
      output: schemas.GetFindingsOutput,
      example: { target_node_id: '8d1e4f2a-0b6c-4e3d-a5f7-2c9b1e0d7a64', severity: 'high' },
      errors: { 404: 'node_not_found: `target_node_id` is not a live node of the workspace' },
      handler: ({ principal }, input) => read(principal, (m) => agents.getFindings(m, input)),
    }),
    defineCapability({
      name: 'agent.failure_clusters',
      access: 'read',
      description: 'Failed sessions grouped by normalised error signature, largest cluster first',
      input: schemas.FailureClustersInput,
      output: schemas.FailureClustersOutput,
      example: { limit: 10 },
      handler: ({ principal }, input) => read(principal, (m) => agents.failureClusters(m, input.limit)),
    }),
  ];
};
