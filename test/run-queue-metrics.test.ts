import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { pendingApproval, succeeded } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

/** The value of the sample of `family` whose labels include every `labels` pair; undefined when none. */
function sample(text: string, family: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${family}{`) && !line.startsWith(`${family} `)) continue;
    const wanted = Object.entries(labels).every(([name, value]) => line.includes(`${name}="${value}"`));
    if (wanted) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

const gated = {
  agent: 'playbook',
  input: { steps: [{ tool: 'billing.credits_balance', requires_approval: true }] },
  concurrency: { key: 'metrics-queue', policy: 'enqueue' },
};

// Issue 43 item 5: queue depth and start delay, across workspaces, without their ids.
describe('run queue metrics (issue 43 item 5)', function () {
  this.timeout(120_000);

  it('reports runs waiting to start per workspace and the start delay, labelled by a hash, never an id', async () => {
    const tenant = await newTenant(10);
    const client = as(tenant.api_key);
    const quick = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance' }] },
    });
    await succeeded(client, quick.body.execution_id);
    // One run holds the concurrency key (waiting for approval); three more wait QUEUED behind it.
    const holder = await client.post('/v1/runs', gated);
    await pendingApproval(client, holder.body.execution_id);
    const waiting = [];
    // At priority 4, which the metrics count apart (issue 43 item 2).
    const low = { ...gated, flow: { priority: 4 } };
    for (let i = 0; i < 3; i++) waiting.push((await client.post('/v1/runs', low)).body.execution_id as string);
    for (const id of waiting) expect((await client.get(`/v1/runs/${id}`)).body.status).to.equal('QUEUED');

    const hash = createHash('md5').update(tenant.workspace_id).digest('hex').slice(0, 12);
    const text = await eventually(
      async () => {
        const latest = await (await fetch(`${getStack().baseUrl}/metrics`)).text();
        return latest.includes(`hash="${hash}"`) ? latest : undefined;
      },
      { what: 'a snapshot that counts the queued runs', timeoutMs: 30_000, intervalMs: 500 },
    );
    const top = text.split('\n').find((line) => line.startsWith('weft_runs_queued_top{') && line.includes(hash))!;
    expect(Number(top.slice(top.lastIndexOf(' ') + 1))).to.equal(3);
    expect(sample(text, 'weft_runs_queued_per_workspace', { quantile: 'max' })).to.be.at.least(3);
    expect(sample(text, 'weft_runs_queued_per_workspace', { quantile: 'p50' })).to.be.at.least(1);
    expect(sample(text, 'weft_run_start_delay_seconds', { quantile: 'p95' })).to.be.at.least(0);
    expect(text).to.include('weft_run_start_delay_top_seconds{');
    expect(sample(text, 'weft_runs_queued_by_priority', { priority: '4' })).to.be.at.least(3);
    expect(sample(text, 'weft_run_start_delay_by_priority_seconds', { priority: '3', quantile: 'p95' })).to.be.at.least(
      0,
    );
    expect(text).to.not.include(tenant.workspace_id);

    for (const id of [holder.body.execution_id, ...waiting]) {
      expect((await client.post(`/v1/runs/${id}/cancel`)).status).to.be.oneOf([200, 202]);
    }
  });
});
