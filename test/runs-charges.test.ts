import { expect } from 'chai';
import type { AnyCapability } from '../src/capabilities/define';
import type { CapabilityService } from '../src/capabilities/service';
import { createCapabilityService } from '../src/capabilities/service';
import { createScopedRead } from '../src/platform/db/unit-of-work';
import { UnavailableError } from '../src/platform/errors';
import { localAgentModel } from '../src/runs/agent-model';
import { createRunSteps } from '../src/runs/steps';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';

type Client = ReturnType<typeof as>;

/**
 * A run step's charge is keyed by the step (`<execution_id>:<step_no>`): the step executor run a
 * second time for the same step, as Temporal retries its activity, finds the first attempt's
 * charge. The run's own workflow waits on the step's approval meanwhile, so only the test runs it.
 */
describe('runs: a retried step is charged once', function () {
  this.timeout(60_000);

  /** The run step executor of a worker, over `capabilities` (the real registry, or one that fails on cue). */
  const runService = (
    capabilities: Pick<CapabilityService, 'tools' | 'invoke' | 'describe' | 'find' | 'toolsFor' | 'describeFor'>,
  ) => {
    const { runtime } = getStack();
    // No rules are stored in this test, so no filter is ever evaluated: an empty pool answers nothing.
    const filters = { evaluate: () => Promise.reject(new Error('no approval rules here')) };
    return createRunSteps({ uow: runtime.uow, capabilities, agentModel: localAgentModel, filters });
  };

  /** A run whose one paid read step waits on approval: the step has not run. */
  async function waitingSearchRun(client: Client): Promise<string> {
    const dispatched = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'ontology.search', input: { query: 'ada lovelace' }, requires_approval: true }] },
    });
    expect(dispatched.status).to.equal(202);
    const id = dispatched.body.execution_id;
    await eventually(async () => (await client.get(`/v1/runs/${id}`)).body.status === 'AWAITING_APPROVAL', {
      what: 'the run to wait',
    });
    return id;
  }

  const ledger = async (workspaceId: string) =>
    getStack().ownerDataSource.query(
      `SELECT idempotency_key AS key, amount, settlement FROM credit_ledger
       WHERE workspace_id = $1 AND kind = 'ontology.search.hybrid' ORDER BY created_at, amount`,
      [workspaceId],
    );

  const stepRow = async (client: Client, id: string) => (await client.get(`/v1/runs/${id}`)).body.steps[0];

  it('a worker lost between the charge and the step row: the retry finds the charge', async () => {
    const tenant = await newTenant(10);
    const client = as(tenant.api_key);
    const id = await waitingSearchRun(client);
    const real = getStack().runtime.services.capabilities;

    // Attempt 1: the capability answers and its charge is confirmed, then the worker is gone.
    const dying = runService({
      tools: real.tools,
      describe: real.describe,
      find: real.find,
      toolsFor: real.toolsFor,
      describeFor: real.describeFor,
      invoke: async (...args) => {
        await real.invoke(...args);
        throw new Error('worker lost before the step row was written');
      },
    });
    const lost = await dying.runStep(tenant.workspace_id, id, 0).catch((error: Error) => error);
    expect(lost).to.be.instanceOf(Error);
    expect(await creditBalance(tenant.tenant_id)).to.equal(9);
    expect(await stepRow(client, id)).to.include({ status: 'RUNNING', credits_charged: 0 });

    // Attempt 2, the real executor: the step runs, and the charge it reports is the first one.
    expect(await runService(real).runStep(tenant.workspace_id, id, 0)).to.deep.equal({ status: 'SUCCEEDED' });
    expect(await stepRow(client, id)).to.include({ status: 'SUCCEEDED', credits_charged: 1 });
    expect(await creditBalance(tenant.tenant_id)).to.equal(9);
    expect(await ledger(tenant.workspace_id)).to.deep.equal([{ key: `${id}:0`, amount: -1, settlement: 'confirmed' }]);

    // A third run of the step answers what it recorded, and charges nothing either.
    expect(await runService(real).runStep(tenant.workspace_id, id, 0)).to.deep.equal({ status: 'SUCCEEDED' });
    expect(await creditBalance(tenant.tenant_id)).to.equal(9);
    expect((await client.post(`/v1/runs/${id}/cancel`)).status).to.equal(200);
  });

  it('a transient failure is refunded, and its retry is charged once', async () => {
    const tenant = await newTenant(10);
    const client = as(tenant.api_key);
    const id = await waitingSearchRun(client);
    const { runtime } = getStack();
    const search = runtime.services.capabilities.tools.find((tool) => tool.name === 'ontology.search')!;
    let calls = 0;
    const flaky = {
      ...search,
      handler: (call: unknown, input: unknown) => {
        calls += 1;
        if (calls === 1) throw new UnavailableError('the search is briefly unavailable');
        return (search.handler as (call: unknown, input: unknown) => Promise<unknown>)(call, input);
      },
    } as AnyCapability;
    const runs = runService(
      createCapabilityService({
        uow: runtime.uow,
        read: createScopedRead(runtime.dataSource),
        logger: runtime.logger,
        credits: runtime.services.credits,
        tools: [flaky],
        validateOutputs: true,
      }),
    );

    const failed = await runs.runStep(tenant.workspace_id, id, 0).catch((error: Error) => error);
    expect(failed).to.be.instanceOf(UnavailableError);
    expect(await creditBalance(tenant.tenant_id)).to.equal(10);

    expect(await runs.runStep(tenant.workspace_id, id, 0)).to.deep.equal({ status: 'SUCCEEDED' });
    expect(await stepRow(client, id)).to.include({ status: 'SUCCEEDED', credits_charged: 1 });
    expect(await creditBalance(tenant.tenant_id)).to.equal(9);
    expect(await ledger(tenant.workspace_id)).to.deep.equal([
      { key: `${id}:0`, amount: -1, settlement: 'refunded' },
      { key: null, amount: 1, settlement: null },
      { key: `${id}:0#2`, amount: -1, settlement: 'confirmed' },
    ]);
    expect((await client.post(`/v1/runs/${id}/cancel`)).status).to.equal(200);
  });
});
