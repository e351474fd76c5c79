// Records the histories of durable waits (issue 40 item 3) that test/workflow-replay.test.ts replays,
// beside scripts/record-histories.ts (`npm run histories:record` runs both). Re-record after an
// intentional change to workflows/run-waits.ts, and review the diff of test/histories/.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { eventually } from '../test/helpers/eventually';
import { HISTORIES_DIR, HISTORY_ENCRYPTION_KEY, historyToFixture } from '../test/helpers/histories';
import { as } from '../test/helpers/http';
import { runUntil } from '../test/helpers/runs';
import type { Stack } from '../test/helpers/stack';
import { bootStack } from '../test/helpers/stack';
import { newTenant } from '../test/helpers/tenants';

describe('record the histories of durable waits into test/histories', function () {
  this.timeout(120_000);
  let variant: { stack: Stack; stop: () => Promise<void> } | undefined;
  afterEach(async () => {
    await variant?.stop();
    variant = undefined;
  });

  /** Waits for the workflow (run `runId`, else its last) to close, then writes its history as `<name>.json`. */
  async function record(name: string, workflowId: string, runId?: string) {
    const handle = variant!.stack.runtime.temporal.client.workflow.getHandle(workflowId, runId);
    await handle.result().catch(() => undefined);
    const history = await handle.fetchHistory();
    writeFileSync(path.join(HISTORIES_DIR, `${name}.json`), historyToFixture(history));
  }

  async function boot(env: Record<string, string> = {}) {
    variant = await bootStack({ WEFT_ENCRYPTION_KEY: HISTORY_ENCRYPTION_KEY, ...env });
    const tenant = await newTenant(10);
    const client = as(tenant.api_key, variant.stack.baseUrl);
    const dispatch = async (steps: unknown[]) => {
      const answer = await client.post('/v1/runs', { agent: 'playbook', input: { steps } });
      expect(answer.status, answer.text).to.equal(202);
      return answer.body.execution_id as string;
    };
    const waiting = (id: string) => runUntil(client, id, (run) => run.status === 'WAITING', 'the run to wait');
    return { tenant, client, dispatch, waiting };
  }

  const waitFor = (timeout = 3600) => ({
    tool: 'run.wait_for',
    input: { name: 'ticket closed', timeout_seconds: timeout, output_schema: { type: 'object' } },
  });

  it('a playbook that sleeps, then runs a tool; a wait_for completed by its token; one timed out', async () => {
    const { client, dispatch, waiting } = await boot();
    const slept = await dispatch([{ tool: 'run.sleep', input: { seconds: 1 } }, { tool: 'billing.credits_balance' }]);
    await record('run-playbook-sleep', `run-${slept}`);

    const completed = await dispatch([waitFor(), { tool: 'billing.credits_balance' }]);
    const { waitpoint_id, token } = (await waiting(completed)).steps[0].output;
    const done = await as(token, variant!.stack.baseUrl).post(`/v1/waitpoints/${waitpoint_id}/complete`, {
      output: { closed: true },
    });
    expect(done.status, done.text).to.equal(200);
    await record('run-playbook-waitpoint', `run-${completed}`);

    const timedOut = await dispatch([waitFor(1)]);
    await runUntil(client, timedOut, (run) => run.status === 'FAILED', 'the timeout');
    await record('run-playbook-waitpoint-timeout', `run-${timedOut}`);
  });

  // `run-playbook-runs-wait` was recorded before the marker `run-wait-settled-in-read` and is kept as it is,
  // for the old path (a read, then a settle); this one carries the marker (the read settles the step).
  it('runs.wait: a run waits for another that waits for its approval', async () => {
    const { tenant, client, dispatch, waiting } = await boot();
    const awaited = await dispatch([{ tool: 'billing.credits_balance', requires_approval: true }]);
    const pending = await runUntil(client, awaited, (run) => run.approvals.length > 0, 'the approval');
    const waiter = await dispatch([{ tool: 'runs.wait', input: { execution_id: awaited } }]);
    await waiting(waiter);
    const resolved = await as(tenant.user_jwt, variant!.stack.baseUrl).post(
      `/v1/approvals/${pending.approvals[0].approval_id}/resolve`,
      { decision: 'APPROVED' },
    );
    expect(resolved.status, resolved.text).to.equal(200);
    await record('run-playbook-runs-wait-settled', `run-${waiter}`);
  });

  it('a wait_for that continues as new while it waits, then is completed with a key', async () => {
    const { client, dispatch, waiting } = await boot({
      RUN_APPROVAL_RECHECK_SECONDS: '1',
      RUN_APPROVAL_RECHECKS_PER_RUN: '1',
    });
    const id = await dispatch([waitFor(), { tool: 'billing.credits_balance' }]);
    const { waitpoint_id } = (await waiting(id)).steps[0].output;
    const handle = variant!.stack.runtime.temporal.client.workflow.getHandle(`run-${id}`);
    const first = (await handle.describe()).runId;
    await eventually(async () => (await handle.describe()).runId !== first, { what: 'a continued run' });
    const done = await client.post(`/v1/waitpoints/${waitpoint_id}/complete`, { output: { closed: true } });
    expect(done.status, done.text).to.equal(200);
    expect(await handle.result()).to.deep.equal({ status: 'SUCCEEDED' });
    const started = (await handle.fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes;
    const before = started?.continuedExecutionRunId;
    expect(before).to.be.a('string');
    await record('run-playbook-wait-continued-before', `run-${id}`, before!);
    await record('run-playbook-wait-continued-last', `run-${id}`);
  });
});
