import { MockActivityEnvironment } from '@temporalio/testing';
import { expect } from 'chai';
import { createGraphActivities } from '../activities/graph';
import { createMaintenanceActivities } from '../activities/maintenance';
import { scheduleId } from '../src/app/schedules';
import { importanceScore } from '../src/importance/formula';
import { ImportanceSettings } from '../src/ontology-config/schemas';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

const NODES = '/v1/ontology/nodes';
const DAY = 86_400_000;

async function runWorkflow(type: 'typeCatalogRefreshWorkflow' | 'importanceDecayWorkflow') {
  const { runtime, config } = getStack();
  return runtime.temporal.client.workflow.execute(type, {
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    workflowId: `test-${type}-${Date.now()}`,
    args: [{}],
  });
}

describe('graph: maintenance workflows and schedules', function () {
  this.timeout(120_000);

  it('has Temporal Schedules for the daily type-catalog recompute and the nightly importance decay', async () => {
    const { runtime, config } = getStack();
    for (const name of ['type-catalog-refresh', 'importance-decay']) {
      const description = await runtime.temporal.client.schedule
        .getHandle(scheduleId(config.TEMPORAL_TASK_QUEUE, { name }))
        .describe();
      expect(description.action.type).to.equal('startWorkflow');
      expect(description.spec.intervals?.[0]?.every).to.equal(DAY);
    }
  });

  it('type-catalog refresh recounts rows and keys, soft-deletes gone types and writes type_stats_refresh', async () => {
    const { api_key, workspace_id } = await newTenant();
    const client = as(api_key);
    const a = (await client.post(NODES, { type: 'person', name: 'a', properties: { email: 'x', role: 'r' } })).body;
    await client.post(NODES, { type: 'person', name: 'b', properties: { email: 'y' } });
    const b = (await client.post(NODES, { type: 'person', name: 'c', properties: { phone: '1', email: 'z' } })).body;
    await client.post('/v1/ontology/edges', {
      type: 'KNOWS',
      source_node_id: a.id,
      target_node_id: b.id,
      properties: { since: 1 },
    });
    const gone = (await client.post(NODES, { type: 'ephemeral', name: 'gone' })).body;
    await client.delete(`${NODES}/${gone.id}`);

    const result = await runWorkflow('typeCatalogRefreshWorkflow');
    expect(result.workspaces).to.be.greaterThan(0);

    const person = (await client.get('/v1/ontology/types/person')).body;
    expect(person).to.include({ kind: 'node', row_count: 3 });
    expect(person.common_property_keys).to.deep.equal(['email', 'phone', 'role']);
    expect(new Date(person.last_seen_at).getTime()).to.equal(new Date(b.created_at).getTime());
    const knows = (await client.get('/v1/ontology/types/KNOWS?kind=edge')).body;
    expect(knows).to.include({ kind: 'edge', row_count: 1 });
    expect(knows.common_property_keys).to.deep.equal(['since']);
    expect((await client.get('/v1/ontology/types/ephemeral')).status).to.equal(404);
    const listed = (await client.get('/v1/ontology/types')).body.map(
      (t: { kind: string; name: string }) => `${t.kind}:${t.name}`,
    );
    expect(listed).to.deep.equal(['node:person', 'edge:KNOWS']);
    expect((await client.get('/v1/ontology/types?kind=edge')).body).to.have.length(1);

    const events = await getStack().ownerDataSource.query(
      `SELECT payload FROM events WHERE workspace_id = $1 AND event_type = 'type_stats_refresh'`,
      [workspace_id],
    );
    expect(events).to.have.length(1);
    expect(events[0].payload).to.deep.equal({ node_types: 1, edge_types: 1, removed: 1 });

    // A type seen again after its soft delete comes back.
    await client.post(NODES, { type: 'ephemeral', name: 'back' });
    expect((await client.get('/v1/ontology/types/ephemeral')).status).to.equal(200);
  });

  it('importance decay applies the formula with each workspace’s settings, floor and ceiling included', async () => {
    const one = await newTenant();
    const two = await newTenant();
    const owner = getStack().ownerDataSource;
    const old = (await as(one.api_key).post(NODES, { type: 'note', name: 'old', base_salience: 0.4 })).body;
    const fresh = (await as(one.api_key).post(NODES, { type: 'note', name: 'fresh', base_salience: 0.4 })).body;
    const floored = (await as(two.api_key).post(NODES, { type: 'note', name: 'floored', base_salience: 0.4 })).body;
    const capped = (await as(two.api_key).post(NODES, { type: 'note', name: 'capped', base_salience: 0.9 })).body;
    await owner.query(
      `UPDATE nodes SET created_at = now() - interval '10 days', last_touch_at = now() - interval '2 days',
       reference_count = 3 WHERE id = $1`,
      [old.id],
    );
    await owner.query(
      `UPDATE nodes SET created_at = now() - interval '1000 days', last_touch_at = now() - interval '1000 days'
       WHERE id = $1`,
      [floored.id],
    );
    await owner.query(`UPDATE nodes SET reference_count = 40 WHERE id = $1`, [capped.id]);
    const patched = await as(two.api_key).patch('/v1/ontology/config', {
      importance: { min_importance: 0.25, max_importance: 0.95 },
    });
    expect(patched.status).to.equal(200);

    await runWorkflow('importanceDecayWorkflow');

    const score = async (key: string, id: string) => (await as(key).get(`${NODES}/${id}`)).body.importance_score;
    // (0.4 + 3 * 0.1 * e^(-0.05*2)) * e^(-0.01*10)
    expect(await score(one.api_key, old.id)).to.be.closeTo((0.4 + 0.3 * Math.exp(-0.1)) * Math.exp(-0.1), 1e-4);
    expect(await score(one.api_key, fresh.id)).to.be.closeTo(0.4, 1e-4);
    // 0.4 * e^(-10) would be 0.00002: the floor holds.
    expect(await score(two.api_key, floored.id)).to.equal(0.25);
    // 0.9 + 40 * 0.1 would be 4.9: the ceiling holds.
    expect(await score(two.api_key, capped.id)).to.equal(0.95);

    // Running it again the same night changes nothing: the score is recomputed, not decayed twice.
    await runWorkflow('importanceDecayWorkflow');
    expect(await score(one.api_key, old.id)).to.be.closeTo((0.4 + 0.3 * Math.exp(-0.1)) * Math.exp(-0.1), 1e-4);
  });

  it('a steep decay on an old node never fails: edge creation and the nightly pass match the formula', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const owner = getStack().ownerDataSource;
    const settings = (
      await client.patch('/v1/ontology/config', { importance: { base_decay_lambda: 10, recency_lambda: 10 } })
    ).body;
    expect(settings.importance.base_decay_lambda).to.equal(10);
    const old = (await client.post(NODES, { type: 'note', name: 'old', base_salience: 0.5 })).body;
    const fresh = (await client.post(NODES, { type: 'note', name: 'fresh', base_salience: 0.5 })).body;
    await owner.query(`UPDATE nodes SET created_at = now() - interval '75 days' WHERE id = $1`, [old.id]);

    // exp(-10 * 75) is below float8's range: this edge used to answer 500.
    const edge = await client.post('/v1/ontology/edges', {
      type: 'r',
      source_node_id: fresh.id,
      target_node_id: old.id,
    });
    expect(edge.status).to.equal(201);
    const touched = (await client.get(`${NODES}/${old.id}`)).body;
    const expected = (node: typeof touched, now: Date) =>
      importanceScore(
        {
          baseSalience: node.base_salience,
          referenceCount: node.reference_count,
          lastTouchAt: new Date(node.last_touch_at),
          createdAt: new Date(node.created_at),
        },
        ImportanceSettings.parse(settings.importance),
        now,
      );
    expect(touched.importance_score).to.be.greaterThan(0);
    // The touch computed the score at its own clock, which it wrote as last_touch_at.
    expect(touched.importance_score / expected(touched, new Date(touched.last_touch_at))).to.be.closeTo(1, 1e-9);

    // Both ages past the bound, so the clock's progress during the pass cannot move the expectation.
    await owner.query(`UPDATE nodes SET last_touch_at = now() - interval '75 days' WHERE id = $1`, [old.id]);
    expect((await runWorkflow('importanceDecayWorkflow')).failed).to.equal(0);
    const decayed = (await client.get(`${NODES}/${old.id}`)).body;
    // The pass leaves a score alone when it would move by less than 1e-7.
    expect(decayed.importance_score).to.be.closeTo(expected(decayed, new Date()), 1e-7);
  });

  it('the nightly decay skips a workspace that fails (and reports it) and still decays the others', async () => {
    const owner = getStack().ownerDataSource;
    const [broken, healthy] = (await Promise.all([newTenant(), newTenant()])).sort((a, b) =>
      a.workspace_id < b.workspace_id ? -1 : 1,
    );
    // Settings no release could write: reading them fails, so this workspace's decay fails. It
    // comes first in the pass (workspaces are visited in id order).
    await owner.query(
      `INSERT INTO workspace_settings (workspace_id, importance) VALUES ($1, '{"base_decay_lambda": "steep"}')`,
      [broken.workspace_id],
    );
    try {
      const node = (await as(healthy.api_key).post(NODES, { type: 'note', name: 'aging', base_salience: 0.4 })).body;
      await owner.query(`UPDATE nodes SET created_at = now() - interval '10 days' WHERE id = $1`, [node.id]);

      const result = await runWorkflow('importanceDecayWorkflow');
      expect(result.failed).to.be.at.least(1);
      const score = (await as(healthy.api_key).get(`${NODES}/${node.id}`)).body.importance_score;
      expect(score).to.be.closeTo(0.4 * Math.exp(-0.1), 1e-4);
    } finally {
      await owner.query(`DELETE FROM workspace_settings WHERE workspace_id = $1`, [broken.workspace_id]);
    }
  });

  it('a long pass heartbeats inside its loops: per page of nodes, with its progress, and per workspace', async () => {
    const { api_key, workspace_id } = await newTenant();
    for (let i = 0; i < 25; i += 5) {
      await Promise.all([0, 1, 2, 3, 4].map((j) => as(api_key).post(NODES, { type: 'note', name: `n${i + j}` })));
    }
    const owner = getStack().ownerDataSource;
    // The batch of one workspace that starts right after its predecessor is exactly this one.
    const [{ before }] = await owner.query(`SELECT max(id::text) AS before FROM workspaces WHERE id < $1`, [
      workspace_id,
    ]);
    const { runtime } = getStack();
    const activities = createGraphActivities({
      dataSource: runtime.dataSource,
      typeCatalog: runtime.services.typeCatalog,
      importance: runtime.services.importance,
      nodesPerPage: 10,
    });
    // Temporal's activity test environment runs the activity with a real Context and reports each heartbeat.
    const environment = new MockActivityEnvironment();
    const beats: Record<string, unknown>[] = [];
    environment.on('heartbeat', (details: Record<string, unknown>) => beats.push(details));

    const result = await environment.run(activities.decayImportance, { after: before, size: 1 });
    expect(result).to.deep.equal({ processed: 1, failed: 0, last: workspace_id });
    const pages = beats.filter((beat) => beat.workspace === workspace_id && 'nodes' in beat);
    expect(pages.map((beat) => beat.nodes)).to.deep.equal([10, 20, 25]);
    expect(pages[0]).to.include({ done: 0, failed: 0 });
    expect(beats.at(-1)).to.deep.equal({ done: 1, failed: 0 });
  });

  it('heartbeats while settling abandoned prompts, once per workspace at least (L-8)', async () => {
    await newTenant();
    const { runtime } = getStack();
    const activities = createMaintenanceActivities({ outbox: runtime.outbox, services: runtime.services });
    const environment = new MockActivityEnvironment();
    let beats = 0;
    environment.on('heartbeat', () => {
      beats += 1;
    });
    await environment.run(activities.settleAbandonedPrompts, { minAgeSeconds: 3600 });
    const [{ workspaces }] = await getStack().ownerDataSource.query(
      `SELECT count(*)::int AS workspaces FROM workspaces`,
    );
    expect(beats).to.be.at.least(workspaces);
  });
});
