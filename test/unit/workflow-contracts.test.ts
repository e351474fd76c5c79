import { expect } from 'chai';
import * as agents from '../../src/agents/workflow';
import * as capabilities from '../../src/capabilities/workflow';
import * as code from '../../src/code/workflow';
import * as communities from '../../src/communities/workflow';
import * as credits from '../../src/credits/workflow';
import * as embeddings from '../../src/embeddings/workflow';
import * as graph from '../../src/graph/workflow';
import * as importance from '../../src/importance/workflow';
import * as merges from '../../src/merges/workflow';
import * as outbox from '../../src/platform/outbox/workflow';
import type { WorkflowContract, WorkflowFunction } from '../../src/platform/temporal/contract';
import * as prompt from '../../src/prompt/workflow';
import * as runCallbacks from '../../src/run-callbacks/workflow';
import * as runSchedules from '../../src/run-schedules/workflow';
import * as runFlow from '../../src/runs/flow-workflow';
import * as runs from '../../src/runs/workflow';
import * as triggers from '../../src/triggers/workflow';
import * as typeCatalog from '../../src/type-catalog/workflow';
import * as implementations from '../../workflows';

// Compile time: each implementation has exactly its contract's signature, so a change to one
// without the other fails `tsc` (which `npm test` runs) before any test starts.
type Conforms<C, F> = F extends WorkflowFunction<C> ? (WorkflowFunction<C> extends F ? true : false) : false;
const conformance: Record<string, true> = {
  prompt: true satisfies Conforms<typeof prompt.promptWorkflow, typeof implementations.promptWorkflow>,
  resolver: true satisfies Conforms<
    typeof merges.personResolverWorkflow,
    typeof implementations.personResolverWorkflow
  >,
  review: true satisfies Conforms<typeof merges.mergeCandidateWorkflow, typeof implementations.mergeCandidateWorkflow>,
  backfill: true satisfies Conforms<
    typeof embeddings.embeddingBackfillWorkflow,
    typeof implementations.embeddingBackfillWorkflow
  >,
  creditsReconcile: true satisfies Conforms<
    typeof credits.creditsReconcileWorkflow,
    typeof implementations.creditsReconcileWorkflow
  >,
  embeddings: true satisfies Conforms<
    typeof embeddings.embeddingQueueWorkflow,
    typeof implementations.embeddingQueueWorkflow
  >,
  clustering: true satisfies Conforms<
    typeof agents.failureClusterWorkflow,
    typeof implementations.failureClusterWorkflow
  >,
  sweeper: true satisfies Conforms<
    typeof agents.agentSessionSweepWorkflow,
    typeof implementations.agentSessionSweepWorkflow
  >,
  keyPurge: true satisfies Conforms<
    typeof capabilities.capabilityKeyPurgeWorkflow,
    typeof implementations.capabilityKeyPurgeWorkflow
  >,
  run: true satisfies Conforms<typeof runs.runWorkflow, typeof implementations.runWorkflow>,
  runCallback: true satisfies Conforms<
    typeof runCallbacks.runCallbackWorkflow,
    typeof implementations.runCallbackWorkflow
  >,
  callbackRetention: true satisfies Conforms<
    typeof runCallbacks.runCallbackRetentionWorkflow,
    typeof implementations.runCallbackRetentionWorkflow
  >,
  runScheduleAction: true satisfies Conforms<
    typeof runSchedules.runScheduleActionWorkflow,
    typeof implementations.runScheduleActionWorkflow
  >,
  codeIndex: true satisfies Conforms<typeof code.codeIndexWorkflow, typeof implementations.codeIndexWorkflow>,
  communityRefresh: true satisfies Conforms<
    typeof communities.communityRefreshWorkflow,
    typeof implementations.communityRefreshWorkflow
  >,
  communityWorkspaceRefresh: true satisfies Conforms<
    typeof communities.communityWorkspaceRefreshWorkflow,
    typeof implementations.communityWorkspaceRefreshWorkflow
  >,
  runFlow: true satisfies Conforms<typeof runFlow.runFlowWorkflow, typeof implementations.runFlowWorkflow>,
  deliveryRetention: true satisfies Conforms<
    typeof triggers.webhookDeliveryRetentionWorkflow,
    typeof implementations.webhookDeliveryRetentionWorkflow
  >,
};

const isContract = (value: unknown): value is WorkflowContract<any, unknown> =>
  Boolean(value && typeof value === 'object' && 'type' in value && 'id' in value);

// Every contract module; a feature with workflows adds its `workflow.ts` here.
const contracts = [
  prompt,
  merges,
  embeddings,
  credits,
  agents,
  capabilities,
  outbox,
  typeCatalog,
  importance,
  runs,
  runFlow,
  runCallbacks,
  runSchedules,
  code,
  communities,
  triggers,
  graph,
].flatMap((module) => Object.values(module).filter(isContract));

describe('workflow contracts (src/<feature>/workflow.ts) and the worker bundle (workflows/)', () => {
  it('names a workflow the bundle exports for every contract, and every export has a contract', () => {
    expect(Object.keys(conformance)).to.have.length.greaterThan(0);
    const exported = Object.entries(implementations)
      .filter(([, value]) => typeof value === 'function')
      .map(([name]) => name)
      .sort();
    expect(contracts.map((contract) => contract.type).sort()).to.deep.equal(exported);
  });

  it('gives every contract a distinct, meaningful id', () => {
    const ids = [
      prompt.promptWorkflow.id({ correlationId: 'c1' } as never),
      merges.personResolverWorkflow.id({ nodeId: 'n1', workspaceId: 'w1' }),
      merges.mergeCandidateWorkflow.id({ candidateId: 'm1', workspaceId: 'w1' }),
      embeddings.embeddingQueueWorkflow.id({ workspaceId: 'w1' }),
      agents.failureClusterWorkflow.id({ workspaceId: 'w1', sessionId: 's1' }),
      runs.runWorkflow.id({ workspaceId: 'w1', executionId: 'e1', agent: 'playbook', stepCount: 1 }),
      code.codeIndexWorkflow.id({ workspaceId: 'w1', repo: 'weft' } as never),
      runCallbacks.runCallbackWorkflow.id({ workspaceId: 'w1', deliveryId: 'd1', series: 2 }),
      runFlow.runFlowWorkflow.id({ workspaceId: 'w1', executionId: 'e1' }),
    ];
    expect(ids).to.deep.equal([
      'prompt-c1',
      'resolve-n1',
      'merge-m1',
      'embed-queue-w1',
      'failure-cluster-s1',
      'run-e1',
      'code-index-w1-weft',
      'run-callback-d1-2',
      'run-flow-e1',
    ]);
  });
});
