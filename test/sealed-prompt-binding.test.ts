import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createSealer } from '../src/platform/crypto/sealer';
import { findFailureDetails } from '../src/platform/temporal/failures';
import { sourceHash } from '../src/prompt/summary';
import { promptWorkflow } from '../src/prompt/workflow';
import { getStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';

const PROMPT = 'Katherine Johnson works at Langley Research Center.';

/**
 * Temporal as a side door: whoever can start a workflow chooses its input. A prompt sealed by the
 * API for one workspace must not open in a workflow started by hand for another.
 */
describe('sealed prompts are bound to their workspace and correlation id (over Temporal)', function () {
  this.timeout(30_000);

  const startByHand = async (target: { workspace_id: string; tenant_id: string }, sealedFor: string) => {
    const { runtime, config } = getStack();
    const sealed = createSealer(config.WEFT_ENCRYPTION_KEY).seal(PROMPT, {
      workspaceId: sealedFor,
      correlationId: randomUUID(),
    });
    const correlationId = randomUUID();
    const handle = await runtime.temporal.workflows.start(promptWorkflow, {
      workspaceId: target.workspace_id,
      correlationId,
      prompt: sealed,
      sourceHash: sourceHash(PROMPT),
      requestHash: sourceHash(PROMPT),
      promptKind: 'markdown_text',
      forceIntent: 'update',
      startedAtMs: Date.now(),
    });
    return {
      correlationId,
      outcome: await handle.result().then(
        () => undefined,
        (error: unknown) => error,
      ),
    };
  };

  it("a prompt sealed for workspace A but started in B fails 'forbidden', writes nothing and refunds", async () => {
    const a = await newTenant(20);
    const b = await newTenant(20);
    const { correlationId, outcome } = await startByHand(b, a.workspace_id);
    expect(findFailureDetails(outcome)?.code).to.equal('forbidden');

    const { ownerDataSource } = getStack();
    const nodes = await ownerDataSource.query(`SELECT name FROM nodes WHERE workspace_id = $1`, [b.workspace_id]);
    expect(nodes).to.deep.equal([]);
    expect(await creditBalance(b.tenant_id)).to.equal(20);
    const audits = await ownerDataSource.query(`SELECT status FROM prompt_runs WHERE correlation_id = $1`, [
      correlationId,
    ]);
    expect(audits).to.deep.equal([{ status: 'error' }]);
  });

  it('nor in its own workspace under another correlation id', async () => {
    const a = await newTenant(20);
    const { outcome } = await startByHand(a, a.workspace_id);
    expect(findFailureDetails(outcome)?.code).to.equal('forbidden');
    expect(await creditBalance(a.tenant_id)).to.equal(20);
  });
});
