import { expect } from 'chai';
import { agentSessionSweepWorkflow } from '../src/agents/workflow';
import { scheduleId } from '../src/app/schedules';
import { capClient } from './helpers/cap';
import { sleep } from './helpers/eventually';
import { createNode } from './helpers/graph';
import type { Stack } from './helpers/stack';
import { bootStack, getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

const TTL_SECONDS = 2;

describe('the session sweeper (a Temporal Schedule)', () => {
  // A second stack whose configuration gives sessions a two-second TTL; it shares the database.
  let short: Stack;
  let stop: () => Promise<void>;

  before(async function () {
    this.timeout(120_000);
    ({ stack: short, stop } = await bootStack({ AGENT_SESSION_TTL_SECONDS: String(TTL_SECONDS) }));
  });

  after(async function () {
    this.timeout(60_000);
    await stop?.();
  });

  it('is scheduled every 30–60 s and visible with its description', async () => {
    const { config, runtime } = getStack();
    const description = await runtime.temporal.client.schedule
      .getHandle(scheduleId(config.TEMPORAL_TASK_QUEUE, { name: 'agent-session-sweep' }))
      .describe();
    expect(description.action).to.include({ workflowType: 'agentSessionSweepWorkflow' });
    const every = description.spec.intervals?.[0]?.every as number;
    expect(every).to.be.within(30_000, 60_000);
    expect(description.state.note).to.match(/AGENT_SESSION_TTL_SECONDS/);
  });

  it('expires sessions whose heartbeat is older than the TTL and abandons their claims; others live on', async () => {
    const tenant = await newTenant();
    const cap = capClient(tenant.api_key, short.baseUrl);
    const stale = (await cap('agent.start_session')).body.result;
    expect(stale.heartbeat_ttl_seconds).to.equal(TTL_SECONDS);
    const target = await createNode(tenant.api_key, 'code.file', 'swept.ts');
    const claim = (
      await cap('agent.claim_work', { session_id: stale.session_id, target_node_id: target, intent: 'edit' })
    ).body.result;
    const { session_id: lively } = (await cap('agent.start_session')).body.result;

    await sleep(TTL_SECONDS * 1000 + 500);
    expect((await cap('agent.heartbeat', { session_id: lively })).body.result.already_inactive).to.equal(false);
    const handle = await short.runtime.temporal.workflows.start(agentSessionSweepWorkflow, {});
    const swept = await handle.result();
    expect(swept.expired).to.be.at.least(1);
    expect(swept.abandoned).to.be.at.least(1);

    const beat = await cap('agent.heartbeat', { session_id: stale.session_id });
    expect(beat.body.result).to.include({ status: 'expired', already_inactive: true });
    expect((await cap('agent.heartbeat', { session_id: lively })).body.result).to.include({
      status: 'active',
      already_inactive: false,
    });
    const released = await cap('agent.release_claim', { claim_id: claim.claim_id });
    expect(released.body.result.status).to.equal('abandoned');
    const ended = await cap('agent.end_session', { session_id: stale.session_id, outcome: 'succeeded' });
    expect(ended.body.result).to.include({ status: 'expired', abandoned_claims: 0 });
  });
});
