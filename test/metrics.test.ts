import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { freePort } from '../src/platform/temporal/dev-server';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { succeeded } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';
import type { WeftProcess } from './helpers/weft-process';
import { startWorkerProcess } from './helpers/weft-process';

/** The value of the first sample of `family` whose labels include every `labels` pair; undefined when none. */
function sample(text: string, family: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${family}{`) && !line.startsWith(`${family} `)) continue;
    const wanted = Object.entries(labels).every(([name, value]) => line.includes(`${name}="${value}"`));
    if (wanted) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

const declares = (text: string, family: string) => text.includes(`# TYPE ${family} `);

describe('metrics: GET /metrics on the API and on a worker process (issue 29)', function () {
  this.timeout(120_000);

  it('the API reports HTTP by route, pools, Temporal, runs, approvals, outbox, deliveries and credits', async () => {
    const tenant = await newTenant(50);
    const client = as(tenant.api_key);
    const missing = randomUUID();
    expect((await client.get(`/v1/ontology/nodes/${missing}`)).status).to.equal(404);
    expect((await client.post('/v1/ontology/search', { q: 'anything', mode: 'vector', top_k: 5 })).status).to.equal(
      200,
    );
    const run = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance' }] },
    });
    expect(run.status).to.equal(202);
    await succeeded(client, run.body.execution_id);

    const response = await fetch(`${getStack().baseUrl}/metrics`);
    expect(response.status).to.equal(200);
    expect(response.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();

    // HTTP: the route's template, never the path with its id.
    expect(
      sample(text, 'weft_http_requests_total', { method: 'GET', route: '/v1/ontology/nodes/{node_id}', status: '404' }),
    ).to.be.at.least(1);
    expect(
      sample(text, 'weft_http_requests_total', { method: 'POST', route: '/v1/runs', status: '202' }),
    ).to.be.at.least(1);
    expect(sample(text, 'weft_http_request_duration_seconds_bucket', { route: '/v1/runs', le: '+Inf' })).to.be.at.least(
      1,
    );
    expect(text).to.not.include(missing);
    // Pools (the suite's runtime is the API's), the Temporal client, Node's own.
    expect(sample(text, 'weft_db_pool_max', { pool: 'api' })).to.be.at.least(1);
    for (const family of ['weft_db_pool_in_use', 'weft_db_pool_waiting', 'weft_db_pool_acquire_timeouts_total']) {
      expect(declares(text, family), family).to.equal(true);
    }
    expect(declares(text, 'weft_temporal_client_errors_total')).to.equal(true);
    expect(declares(text, 'nodejs_eventloop_lag_seconds')).to.equal(true);
    // The database's cross-workspace figures come from a snapshot cached for a few seconds
    // (LIMITS.metrics): one taken before this test's run may still be served, so scrape until it is not.
    const figures = await eventually(
      async () => {
        const latest = await (await fetch(`${getStack().baseUrl}/metrics`)).text();
        const fresh =
          (sample(latest, 'weft_runs', { status: 'SUCCEEDED', agent: 'playbook' }) ?? 0) >= 1 &&
          (sample(latest, 'weft_credits_reserved', { kind: 'ontology.search.hybrid' }) ?? 0) >= 1;
        return fresh ? latest : undefined;
      },
      { what: "a snapshot that counts this test's run and search", timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(sample(figures, 'weft_runs', { status: 'SUCCEEDED', agent: 'playbook' })).to.be.at.least(1);
    expect(sample(figures, 'weft_run_approvals_pending')).to.be.a('number');
    expect(sample(figures, 'weft_run_approvals_pending_oldest_age_seconds')).to.be.at.least(0);
    expect(sample(figures, 'weft_outbox_backlog')).to.be.at.least(0);
    expect(sample(figures, 'weft_outbox_lag_seconds')).to.be.at.least(0);
    expect(sample(figures, 'weft_outbox_dead_letters')).to.be.at.least(0);
    expect(declares(figures, 'weft_webhook_deliveries')).to.equal(true);
    expect(sample(figures, 'weft_credits_reserved', { kind: 'ontology.search.hybrid' })).to.be.at.least(1);
    expect(sample(figures, 'weft_credits_charged', { kind: 'ontology.search.hybrid' })).to.be.at.least(1);
    expect(declares(figures, 'weft_credits_refunded')).to.equal(true);
    expect(declares(figures, 'weft_credits_pending')).to.equal(true);
    // Tenant-wide totals stay aggregate (review NM-6): no workspace, tenant, user or run id anywhere, no id
    // of any kind, and no label that could carry one.
    for (const exposition of [text, figures]) {
      for (const id of [tenant.workspace_id, tenant.tenant_id, tenant.user_id, run.body.execution_id])
        expect(exposition).to.not.include(id);
      expect(exposition).to.not.match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i);
      const labels = new Set([...exposition.matchAll(/[{,](\w+)="/g)].map((match) => match[1]));
      for (const label of labels) expect(label).to.not.match(/workspace|tenant|user|key|credential|execution|_id$/);
    }
  });

  it('the API answers only GET and HEAD on /metrics', async () => {
    const response = await fetch(`${getStack().baseUrl}/metrics`, { method: 'POST' });
    expect(response.status).to.equal(405);
    expect(await response.json()).to.have.property('detail');
  });

  describe('a worker process with WORKER_METRICS_PORT', () => {
    let worker: WeftProcess | undefined;
    after(async () => {
      await worker?.kill();
    });

    it('serves its pools and the Temporal SDK’s worker metrics, behind METRICS_TOKEN', async () => {
      const port = await freePort();
      const token = randomUUID();
      worker = startWorkerProcess({
        TEMPORAL_TASK_QUEUE: `weft-durability-metrics-${randomUUID().slice(0, 8)}`,
        WORKER_METRICS_PORT: String(port),
        METRICS_TOKEN: token,
      });
      const url = `http://127.0.0.1:${port}/metrics`;
      const text = await eventually(
        async () => {
          if (worker!.child.exitCode !== null) throw new Error(`the worker exited:\n${worker!.output()}`);
          const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } }).catch(() => undefined);
          const body = response?.ok ? await response.text() : '';
          // The SDK's families appear once its pollers have started.
          return body.includes('temporal_') ? body : undefined;
        },
        { what: 'the worker’s /metrics with the SDK’s families', timeoutMs: 60_000, intervalMs: 250 },
      );
      expect(sample(text!, 'weft_db_pool_max', { pool: 'worker' })).to.be.at.least(1);
      expect(text).to.match(/^temporal_\w+/m);
      expect(declares(text!, 'nodejs_eventloop_lag_seconds')).to.equal(true);
      // The database's figures are the API's alone (summing processes must not count them twice).
      expect(declares(text!, 'weft_runs')).to.equal(false);

      expect((await fetch(url)).status).to.equal(401);
      expect((await fetch(url, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).to.equal(401);
      expect((await fetch(`http://127.0.0.1:${port}/other`)).status).to.equal(404);
    });
  });
});
