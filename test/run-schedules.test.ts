import { Client, Connection, ScheduleAlreadyRunning } from '@temporalio/client';
import { expect } from 'chai';
import type { Principal } from '../src/platform/auth/principal';
import { SCOPES } from '../src/platform/auth/scopes';
import { freePort } from '../src/platform/temporal/dev-server';
import { scheduleRowExists } from '../src/run-schedules/repository';
import type { RunScheduleService } from '../src/run-schedules/service';
import { createRunScheduleService } from '../src/run-schedules/service';
import { createScheduleSync } from '../src/run-schedules/sync';
import { runScheduleTemporalId } from '../src/run-schedules/workflow';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { scheduleGone } from './helpers/run-schedules';
import { FINISHED, pendingApproval, runUntil, succeeded } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

type Api = ReturnType<typeof as>;

const balance = { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance', input: {} }] } };
/** A paused schedule's body as the route's parsing leaves it, for the services built outside the stack. */
const PAUSED_BODY = { timezone: 'UTC', run: balance as never, overlap: 'skip', paused: true } as const;
/** A run that waits for a human: its only step needs approval. */
const gated = {
  agent: 'playbook',
  input: { steps: [{ tool: 'billing.credits_balance', input: {}, requires_approval: true }] },
};

/** Every schedule a test made, deleted afterwards so the suite leaves no Temporal Schedule behind. */
const made: { client: Api; id: string }[] = [];

async function newSchedule(client: Api, body: Record<string, unknown>) {
  const created = await client.post('/v1/run-schedules', body);
  expect(created.status, created.text).to.equal(201);
  made.push({ client, id: created.body.id });
  return created.body;
}

const runsOf = async (client: Api, scheduleId: string) => {
  const listed = await client.get(`/v1/runs?schedule_id=${scheduleId}&limit=200`);
  expect(listed.status, listed.text).to.equal(200);
  return listed.body.runs as any[];
};

const describe_ = (scheduleId: string) =>
  getStack().runtime.temporal.client.schedule.getHandle(runScheduleTemporalId(scheduleId)).describe();

const temporalHas = async (scheduleId: string) =>
  describe_(scheduleId).then(
    () => true,
    () => false,
  );

/** The schedule's outbox events the relay has not delivered yet. */
const pending = (id: string) =>
  getStack()
    .ownerDataSource.query(`SELECT count(*)::int AS n FROM outbox WHERE aggregate_id = $1 AND dispatched_at IS NULL`, [
      id,
    ])
    .then((rows) => rows[0].n as number);

/** The principal a tenant's user JWT authenticates as, for a service built outside the stack's own. */
function principalOf(tenant: Awaited<ReturnType<typeof newTenant>>): Principal {
  const jwt = JSON.parse(Buffer.from(tenant.user_jwt.split('.')[1]!, 'base64url').toString('utf8'));
  return {
    userId: tenant.user_id,
    workspaceId: tenant.workspace_id,
    tenantId: tenant.tenant_id,
    scopes: new Set(SCOPES),
    credential: { kind: 'user_jwt', id: jwt.jti, expiresAt: new Date(jwt.exp * 1000) },
  };
}

/**
 * Runs `use` with a run-schedule service whose Temporal nobody answers for (no retry interceptor: each
 * call fails at once) and whose relay is not kicked: its changes wait in the outbox, as through an outage.
 */
async function withTemporalDown(use: (service: RunScheduleService) => Promise<void>) {
  const { runtime } = getStack();
  const connection = Connection.lazy({ address: `127.0.0.1:${await freePort()}`, interceptors: [] });
  const down = { client: new Client({ connection, namespace: runtime.temporal.namespace }), taskQueue: 'unused' };
  const sync = createScheduleSync({
    temporal: down,
    outbox: { kick: () => undefined },
    logger: runtime.logger,
    rowExists: scheduleRowExists(runtime.uow),
  });
  try {
    await use(createRunScheduleService({ uow: runtime.uow, temporal: down, runs: runtime.services.runs, sync }));
  } finally {
    await connection.close();
  }
}

describe('run schedules (issue 26 part 3)', function () {
  this.timeout(120_000);

  after(async function () {
    this.timeout(180_000);
    const { ownerDataSource, runtime } = getStack();
    for (const { client, id } of made) {
      const deleted = await client.delete(`/v1/run-schedules/${id}`);
      expect([200, 404], `delete ${id}: ${deleted.text}`).to.include(deleted.status);
    }
    // Gone once the relay has delivered every event of the schedule too (a late one could re-create it).
    // A delivery Temporal refused under load waits out its backoff (5 s, then 10 s …): cleaning up, it is
    // made due at once instead.
    for (const { id } of made) {
      await eventually(
        async () => {
          const due: { workspace_id: string }[] = await ownerDataSource.query(
            `WITH due AS (UPDATE outbox SET next_attempt_at = now() WHERE aggregate_id = $1 AND dispatched_at IS NULL
               RETURNING workspace_id) SELECT workspace_id FROM due`,
            [id],
          );
          for (const row of due) runtime.outbox.kick(row.workspace_id);
          return due.length === 0;
        },
        { what: `schedule ${id}'s events delivered`, timeoutMs: 60_000 },
      );
      // An apply that lands after the deletion deletes its schedule again (both tested below): gone by itself.
      await scheduleGone(id);
    }
  });

  it('an interval schedule fires: a Temporal Schedule whose runs carry schedule_id; delete removes it', async () => {
    const { api_key, workspace_id } = await newTenant(100);
    const client = as(api_key);
    const schedule = await newSchedule(client, { interval: '2s', run: balance, overlap: 'allow', note: 'smoke' });
    expect(schedule).to.include({ interval_seconds: 2, cron: null, timezone: 'UTC', overlap: 'allow', paused: false });

    // Temporal's own view: the id, the note, whose it is (search attributes in clear), next fire times.
    const described = await describe_(schedule.id);
    expect(described.state.paused).to.equal(false);
    expect(described.state.note).to.equal('smoke');
    expect(described.typedSearchAttributes.getAll().map((pair) => [pair.key.name, pair.value])).to.deep.include([
      'WeftWorkspaceId',
      workspace_id,
    ]);
    // Each fire waits in the task queue as this workspace's work (issue 43: the workspace is its fairness key).
    expect((described.action as { priority?: { fairnessKey?: string } }).priority?.fairnessKey).to.equal(workspace_id);
    // The memo says whose it is, sealed under the workspace's key like every payload (the codec opens it).
    const owner = described.raw.memo?.fields?.owner;
    const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');
    expect(text(owner?.metadata?.encoding)).to.equal('binary/encrypted');
    expect(text(owner?.metadata?.['weft-workspace'])).to.equal(workspace_id);
    expect(described.memo?.owner).to.deep.include({ workspaceId: workspace_id, scheduleId: schedule.id });
    const read = await client.get(`/v1/run-schedules/${schedule.id}`);
    expect(read.status, read.text).to.equal(200);
    expect(read.body.temporal.schedule_id).to.equal(`run-schedule-${schedule.id}`);
    expect(read.body.temporal.next_fire_times).to.have.length(5);
    const gaps = read.body.temporal.next_fire_times
      .slice(1)
      .map((at: string, i: number) => Date.parse(at) - Date.parse(read.body.temporal.next_fire_times[i]));
    expect(gaps).to.deep.equal([2000, 2000, 2000, 2000]);

    const runs = await eventually(
      async () => ((await runsOf(client, schedule.id)).length >= 2 ? runsOf(client, schedule.id) : undefined),
      {
        what: 'two scheduled runs',
        timeoutMs: 30_000,
      },
    );
    for (const run of runs) expect(run.schedule_id).to.equal(schedule.id);
    const done = await succeeded(client, runs.at(-1).execution_id);
    expect(done.schedule_id).to.equal(schedule.id);
    // An unfiltered list shows it too; a run dispatched by hand has none.
    const manual = await client.post('/v1/runs', balance);
    const all = (await client.get('/v1/runs?limit=200')).body.runs;
    expect(all.find((run: any) => run.execution_id === manual.body.execution_id).schedule_id).to.equal(null);
    expect((await runsOf(client, schedule.id)).map((run) => run.execution_id)).not.to.include(manual.body.execution_id);

    const deleted = await client.delete(`/v1/run-schedules/${schedule.id}`);
    expect(deleted.status, deleted.text).to.equal(200);
    expect(await temporalHas(schedule.id)).to.equal(false);
    expect((await client.get(`/v1/run-schedules/${schedule.id}`)).status).to.equal(404);
    // The runs stay, and keep naming it.
    expect((await runsOf(client, schedule.id)).length).to.be.at.least(2);
  });

  it('trigger now fires a paused schedule once; pause and resume show in Temporal’s describe', async () => {
    const { api_key } = await newTenant(100);
    const client = as(api_key);
    const schedule = await newSchedule(client, {
      cron: '0 3 1 1 *',
      timezone: 'Europe/Paris',
      run: balance,
      paused: true,
    });
    expect((await describe_(schedule.id)).state.paused).to.equal(true);
    expect(schedule.temporal.next_fire_times[0]).to.match(/^\d{4}-01-01T02:00:00/);

    const triggered = await client.post(`/v1/run-schedules/${schedule.id}/trigger`);
    expect(triggered.status, triggered.text).to.equal(202);
    const [run] = await eventually(
      async () => {
        const runs = await runsOf(client, schedule.id);
        return runs.length === 1 ? runs : undefined;
      },
      { what: 'the triggered run' },
    );
    await succeeded(client, run.execution_id);

    const resumed = await client.post(`/v1/run-schedules/${schedule.id}/resume`);
    expect(resumed.status, resumed.text).to.equal(200);
    expect(resumed.body.paused).to.equal(false);
    expect(resumed.body.temporal.paused).to.equal(false);
    expect((await describe_(schedule.id)).state.paused).to.equal(false);

    const paused = await client.post(`/v1/run-schedules/${schedule.id}/pause`, { note: 'maintenance window' });
    expect(paused.status, paused.text).to.equal(200);
    const described = await describe_(schedule.id);
    expect(described.state).to.include({ paused: true, note: 'maintenance window' });

    // An update reaches Temporal too: now an interval.
    const changed = await client.patch(`/v1/run-schedules/${schedule.id}`, { interval: 3600 });
    expect(changed.status, changed.text).to.equal(200);
    expect(changed.body).to.include({ cron: null, interval_seconds: 3600 });
    expect((await describe_(schedule.id)).spec.intervals?.[0]?.every).to.equal(3_600_000);
  });

  it('overlap skip: while the first run waits for approval, later fires are skipped; allow starts each', async () => {
    const { api_key } = await newTenant(100);
    const client = as(api_key);
    const skip = await newSchedule(client, { interval: '1s', run: gated, overlap: 'skip' });
    const allow = await newSchedule(client, { interval: '1s', run: gated, overlap: 'allow' });
    const [first] = await eventually(
      async () => {
        const runs = await runsOf(client, skip.id);
        return runs.length >= 1 ? runs : undefined;
      },
      { what: 'the skip schedule’s first run' },
    );
    await pendingApproval(client, first.execution_id);
    await eventually(async () => (await runsOf(client, allow.id)).length >= 4, { what: 'four runs under allow' });
    // Several more fire times have passed for the skip schedule: all skipped, its one run still waits.
    await eventually(
      async () => (await client.get(`/v1/run-schedules/${skip.id}`)).body.temporal.skipped_for_overlap >= 3,
      { what: 'skipped fires' },
    );
    expect((await runsOf(client, skip.id)).map((run) => run.execution_id)).to.deep.equal([first.execution_id]);
    const read = await client.get(`/v1/run-schedules/${skip.id}`);
    expect(read.body.temporal.running).to.have.length(1);
    for (const schedule of [skip, allow]) await client.post(`/v1/run-schedules/${schedule.id}/pause`);
  });

  it('cancel_other cancels the previous RUN (its approval too) before the next one starts', async () => {
    const { api_key } = await newTenant(100);
    const client = as(api_key);
    const schedule = await newSchedule(client, {
      cron: '0 3 1 1 *',
      run: gated,
      overlap: 'cancel_other',
      paused: true,
    });
    await client.post(`/v1/run-schedules/${schedule.id}/trigger`);
    const [first] = await eventually(
      async () => {
        const runs = await runsOf(client, schedule.id);
        return runs.length === 1 ? runs : undefined;
      },
      { what: 'the first run' },
    );
    const approval = await pendingApproval(client, first.execution_id);

    // Fired again at once: within the same second too, the second fire is a fire of its own.
    await client.post(`/v1/run-schedules/${schedule.id}/trigger`);
    const cancelled = await runUntil(
      client,
      first.execution_id,
      (run) => run.status === 'CANCELLED',
      'the first run cancelled',
    );
    expect(cancelled.approvals.find((a: any) => a.approval_id === approval.approval_id).status).to.equal('cancelled');
    const runs = await eventually(
      async () => {
        const listed = await runsOf(client, schedule.id);
        return listed.length === 2 ? listed : undefined;
      },
      { what: 'the second run' },
    );
    const second = runs.find((run) => run.execution_id !== first.execution_id);
    await pendingApproval(client, second.execution_id);
    expect(FINISHED).not.to.include((await client.get(`/v1/runs/${second.execution_id}`)).body.status);
  });

  it('buffer_one: one fire made during a run waits, and starts when the run finishes', async () => {
    const tenant = await newTenant(100);
    const client = as(tenant.api_key);
    const schedule = await newSchedule(client, { cron: '0 3 1 1 *', run: gated, overlap: 'buffer_one', paused: true });
    await client.post(`/v1/run-schedules/${schedule.id}/trigger`);
    const [first] = await eventually(
      async () => {
        const runs = await runsOf(client, schedule.id);
        return runs.length === 1 ? runs : undefined;
      },
      { what: 'the first run' },
    );
    const approval = await pendingApproval(client, first.execution_id);
    // Two more fires while it waits: one is buffered, the other dropped; neither dispatches yet.
    await client.post(`/v1/run-schedules/${schedule.id}/trigger`);
    await client.post(`/v1/run-schedules/${schedule.id}/trigger`);
    await eventually(async () => (await describe_(schedule.id)).info.numActionsSkippedOverlap >= 1, {
      what: 'a fire dropped',
    });
    expect(await runsOf(client, schedule.id)).to.have.length(1);
    // The dispatching key never approves; its user's JWT may (the only member of the workspace).
    const resolved = await as(tenant.user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'APPROVED',
    });
    expect(resolved.status, resolved.text).to.equal(200);
    await succeeded(client, first.execution_id);
    const runs = await eventually(
      async () => {
        const listed = await runsOf(client, schedule.id);
        return listed.length === 2 ? listed : undefined;
      },
      { what: 'the buffered fire’s run' },
    );
    await pendingApproval(client, runs.find((run) => run.execution_id !== first.execution_id).execution_id);
    expect(await runsOf(client, schedule.id)).to.have.length(2);
  });

  it('a revoked creator: the fire dispatches nothing, records why and pauses the schedule', async () => {
    const tenant = await newTenant(100);
    const key = await as(tenant.user_jwt).post('/v1/auth/me/api-keys', {
      name: 'scheduler',
      scopes: ['runs:read', 'runs:write', 'schedules:manage', 'billing:read', 'capabilities:read'],
    });
    expect(key.status, key.text).to.equal(201);
    const client = as(key.body.token);
    const schedule = await newSchedule(client, { cron: '0 3 1 1 *', run: balance, paused: true });
    made.at(-1)!.client = as(tenant.user_jwt);
    expect((await as(tenant.user_jwt).delete(`/v1/auth/me/api-keys/${key.body.id}`)).status).to.equal(200);

    const owner = as(tenant.user_jwt);
    // A fire of its own (a manual trigger would make the caller its identity, as a resume does).
    await getStack().runtime.temporal.client.schedule.getHandle(runScheduleTemporalId(schedule.id)).trigger();
    const refused = await eventually(
      async () => {
        const read = await owner.get(`/v1/run-schedules/${schedule.id}`);
        return read.body.last_refusal ? read.body : undefined;
      },
      { what: 'the refusal' },
    );
    expect(refused.last_refusal.reason).to.match(/^credential_revoked/);
    expect(refused.paused).to.equal(true);
    expect(refused.note).to.match(/^Paused by Weft: credential_revoked/);
    await eventually(async () => (await describe_(schedule.id)).state.paused, { what: 'Temporal paused' });
    expect(await runsOf(owner, schedule.id)).to.deep.equal([]);
    // Resumed by the owner, who becomes its identity: Weft's note goes, and the next fire dispatches.
    const resumed = await owner.post(`/v1/run-schedules/${schedule.id}/resume`);
    expect(resumed.body).to.include({ paused: false, note: null });
    await owner.post(`/v1/run-schedules/${schedule.id}/trigger`);
    const [run] = await eventually(
      async () => {
        const runs = await runsOf(owner, schedule.id);
        return runs.length === 1 ? runs : undefined;
      },
      { what: 'a run as the new identity' },
    );
    await succeeded(owner, run.execution_id);
  });

  it('NM-3: trigger, resume, re-time need the run’s scopes (403, none runs); a holder fires it as itself', async () => {
    const tenant = await newTenant(100);
    const owner = as(tenant.user_jwt);
    // A write tool behind an approval: the run shows whom it acts as (its dispatcher never approves it).
    const session = {
      agent: 'playbook',
      input: { steps: [{ tool: 'agent.start_session', input: { name: 'scheduled' }, requires_approval: true }] },
    };
    const schedule = await newSchedule(owner, { interval: 3600, run: session, paused: true });
    const mint = async (scopes: string[]) => {
      const key = await owner.post('/v1/auth/me/api-keys', { name: scopes.join(' '), scopes });
      expect(key.status, key.text).to.equal(201);
      return key.body;
    };
    // The review's key: it may manage schedules and dispatch runs, but not call write tools.
    const narrow = as((await mint(['schedules:manage', 'runs:write', 'runs:read', 'capabilities:read'])).token);
    expect((await narrow.post('/v1/runs', session)).status).to.equal(400);
    const before = (await owner.get(`/v1/run-schedules/${schedule.id}`)).body;

    const triggered = await narrow.post(`/v1/run-schedules/${schedule.id}/trigger`);
    expect(triggered.status, triggered.text).to.equal(403);
    expect(triggered.body.detail).to.match(/capabilities:write/);
    for (const attempt of [
      narrow.post(`/v1/run-schedules/${schedule.id}/resume`),
      narrow.patch(`/v1/run-schedules/${schedule.id}`, { interval: 7200 }),
      narrow.patch(`/v1/run-schedules/${schedule.id}`, { overlap: 'allow' }),
    ]) {
      const refused = await attempt;
      expect(refused.status, refused.text).to.equal(403);
      expect(refused.body.detail).to.match(/capabilities:write/);
    }
    // Its own `run` in the body is refused as POST /v1/runs refuses it.
    expect((await narrow.patch(`/v1/run-schedules/${schedule.id}`, { run: session })).status).to.equal(400);
    // Nothing fired and nothing changed: the schedule reads as before, Temporal took no action, no run.
    const after = (await owner.get(`/v1/run-schedules/${schedule.id}`)).body;
    expect(after).to.deep.include({
      paused: true,
      interval_seconds: 3600,
      overlap: 'skip',
      updated_at: before.updated_at,
    });
    expect((await describe_(schedule.id)).info.numActionsTaken).to.equal(0);
    expect(await runsOf(owner, schedule.id)).to.deep.equal([]);

    // A key that holds the scopes fires it, and its run acts as that key (so that key cannot approve it).
    const capable = await mint([
      'schedules:manage',
      'runs:write',
      'runs:read',
      'capabilities:write',
      'approvals:write',
    ]);
    const fired = await as(capable.token).post(`/v1/run-schedules/${schedule.id}/trigger`);
    expect(fired.status, fired.text).to.equal(202);
    const [run] = await eventually(
      async () => {
        const runs = await runsOf(owner, schedule.id);
        return runs.length === 1 ? runs : undefined;
      },
      { what: 'the run of the capable trigger' },
    );
    const approval = await pendingApproval(owner, run.execution_id);
    const own = await as(capable.token).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    expect(own.status, own.text).to.equal(403);
    expect(own.body.detail.error).to.equal('approval_by_dispatcher');
    expect(
      (await owner.post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' })).status,
    ).to.equal(200);
    await succeeded(owner, run.execution_id);
  });

  it('a fire is idempotent: its activity repeated answers the run it dispatched, never a second', async () => {
    const { api_key, workspace_id } = await newTenant(100);
    const client = as(api_key);
    const schedule = await newSchedule(client, { cron: '0 3 1 1 *', run: balance, paused: true });
    const fires = getStack().runtime.services.runScheduleFires;
    const fire = {
      workspaceId: workspace_id,
      scheduleId: schedule.id,
      fireId: '2026-01-01T02:00:00Z:01a210d5-604c-71aa-bc5c-28717a4b6bd4',
    };
    const once = await fires.fire(fire);
    const twice = await fires.fire(fire);
    expect(once.outcome).to.equal('dispatched');
    expect(twice).to.deep.equal(once);
    expect((await runsOf(client, schedule.id)).map((run) => run.execution_id)).to.deep.equal([once.executionId]);
    // A caller cannot take a schedule's key first.
    const taken = await client.post('/v1/runs', { ...balance, idempotency_key: `schedule:${schedule.id}:x` });
    expect(taken.status).to.equal(422);
  });

  it('row and Temporal do not drift for good: a lost Temporal Schedule returns, an orphan removes itself', async () => {
    const { api_key } = await newTenant(100);
    const client = as(api_key);
    const schedule = await newSchedule(client, { cron: '0 3 1 1 *', run: balance, paused: true });
    const temporal = getStack().runtime.temporal;
    // Lost behind Weft's back (or never created while Temporal was down): the next change's event re-creates it.
    await temporal.client.schedule.getHandle(runScheduleTemporalId(schedule.id)).delete();
    const changed = await client.patch(`/v1/run-schedules/${schedule.id}`, { note: 'back' });
    expect(changed.status, changed.text).to.equal(200);
    expect((await describe_(schedule.id)).state.note).to.equal('back');
    // The relay delivers the same events again (a no-op now); once it has, nothing re-creates the schedule.
    await eventually(async () => (await pending(schedule.id)) === 0, { what: "the schedule's events delivered" });
    // The row gone behind Temporal's back: the next fire finds nothing to dispatch and deletes its schedule.
    await getStack().ownerDataSource.query(`DELETE FROM run_schedules WHERE id = $1`, [schedule.id]);
    await temporal.client.schedule.getHandle(runScheduleTemporalId(schedule.id)).trigger();
    await eventually(async () => !(await temporalHas(schedule.id)), { what: 'the orphan schedule to delete itself' });
    made.pop();
  });

  it('a schedule gone between create and update is created again, not left to a backoff', async () => {
    const tenant = await newTenant(10);
    const { runtime } = getStack();
    // The create is refused as "already running" by a schedule that is deleted before the update reads it
    // (a concurrent apply, or an operator): the apply creates it again rather than failing its delivery.
    const real = runtime.temporal.client;
    let refusals = 0;
    const schedule = Object.create(real.schedule, {
      create: {
        value: async (options: Parameters<typeof real.schedule.create>[0]) => {
          if (refusals++ === 0) throw new ScheduleAlreadyRunning('already running', options.scheduleId);
          return real.schedule.create(options);
        },
      },
    });
    const racing = {
      client: Object.create(real, { schedule: { value: schedule } }),
      taskQueue: runtime.temporal.taskQueue,
    };
    const sync = createScheduleSync({
      temporal: racing,
      outbox: runtime.outbox,
      logger: runtime.logger,
      rowExists: scheduleRowExists(runtime.uow),
    });
    const service = createRunScheduleService({ uow: runtime.uow, temporal: racing, runs: runtime.services.runs, sync });
    const created = await service.create(principalOf(tenant), { cron: '0 3 1 1 *', ...PAUSED_BODY });
    made.push({ client: as(tenant.api_key), id: created.id });
    expect(refusals).to.equal(2);
    expect(created.temporal?.paused).to.equal(true);
  });

  it('a create still in flight when the schedule is deleted does not leave it behind in Temporal', async () => {
    const tenant = await newTenant(10);
    const { runtime } = getStack();
    // The API's own create call held back past its wait (Temporal slow under load); the relay applies the event.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let landed = false;
    const real = runtime.temporal.client;
    const schedule = Object.create(real.schedule, {
      create: {
        value: async (options: Parameters<typeof real.schedule.create>[0]) => {
          await held;
          try {
            return await real.schedule.create(options);
          } finally {
            landed = true;
          }
        },
      },
    });
    const slow = {
      client: Object.create(real, { schedule: { value: schedule } }),
      taskQueue: runtime.temporal.taskQueue,
    };
    const sync = createScheduleSync({
      temporal: slow,
      outbox: runtime.outbox,
      logger: runtime.logger,
      rowExists: scheduleRowExists(runtime.uow),
    });
    const service = createRunScheduleService({ uow: runtime.uow, temporal: slow, runs: runtime.services.runs, sync });
    const principal = principalOf(tenant);
    const created = await service.create(principal, { cron: '0 3 1 1 *', ...PAUSED_BODY });
    await eventually(() => temporalHas(created.id), { what: 'the relay to create the Temporal Schedule' });
    expect((await as(tenant.api_key).delete(`/v1/run-schedules/${created.id}`)).status).to.equal(200);
    await eventually(async () => !(await temporalHas(created.id)), { what: 'the deletion applied' });

    release();
    await eventually(async () => landed, { what: 'the held create to land' });
    await eventually(async () => !(await temporalHas(created.id)), { what: 'the late create undone' });
  });

  it('Temporal down at create and delete: the row commits at once, the outbox brings Temporal in line', async () => {
    const tenant = await newTenant(10);
    const { runtime } = getStack();
    const principal = principalOf(tenant);
    await withTemporalDown(async (service) => {
      const created = await service.create(principal, { cron: '0 3 1 1 *', ...PAUSED_BODY });
      made.push({ client: as(tenant.api_key), id: created.id });
      expect(created.temporal).to.equal(null);
      expect(await temporalHas(created.id)).to.equal(false);
      expect(await pending(created.id)).to.equal(1);
      // Temporal answers again: the relay applies the change.
      runtime.outbox.kick(tenant.workspace_id);
      await eventually(() => temporalHas(created.id), { what: 'the Temporal Schedule after the outage' });
      expect((await as(tenant.api_key).get(`/v1/run-schedules/${created.id}`)).body.temporal.paused).to.equal(true);

      await service.remove(principal, created.id);
      expect(await temporalHas(created.id)).to.equal(true);
      runtime.outbox.kick(tenant.workspace_id);
      await eventually(async () => !(await temporalHas(created.id)), { what: 'the deletion after the outage' });
      made.pop();

      // Trigger now on a schedule Temporal does not have yet applies it first, then fires.
      const unapplied = await service.create(principal, { interval: 3600, ...PAUSED_BODY });
      made.push({ client: as(tenant.api_key), id: unapplied.id });
      expect(await temporalHas(unapplied.id)).to.equal(false);
      const fired = await as(tenant.api_key).post(`/v1/run-schedules/${unapplied.id}/trigger`);
      expect(fired.status, fired.text).to.equal(202);
      await eventually(async () => (await runsOf(as(tenant.api_key), unapplied.id)).length === 1, {
        what: 'the run of a fire triggered before the apply',
      });
    });
  });

  it('a create the relay delivers late, after the deletion overtook it, leaves nothing in Temporal', async () => {
    const tenant = await newTenant(10);
    const { runtime, ownerDataSource } = getStack();
    const principal = principalOf(tenant);
    await withTemporalDown(async (service) => {
      const created = await service.create(principal, { cron: '0 3 1 1 *', ...PAUSED_BODY });
      // The create's first delivery failed and waits out its backoff, so the relay delivers the deletion first.
      await ownerDataSource.query(
        `UPDATE outbox SET next_attempt_at = now() + interval '1 hour' WHERE aggregate_id = $1`,
        [created.id],
      );
      await service.remove(principal, created.id);
      runtime.outbox.kick(tenant.workspace_id);
      // (At most one left: the minute's outbox sweep may have delivered the create before it was held back.)
      await eventually(async () => (await pending(created.id)) <= 1, { what: 'the deletion delivered first' });
      // Then the create is due again, and lands after the deletion.
      await ownerDataSource.query(`UPDATE outbox SET next_attempt_at = now() WHERE aggregate_id = $1`, [created.id]);
      runtime.outbox.kick(tenant.workspace_id);
      await eventually(async () => (await pending(created.id)) === 0, { what: 'the late create delivered' });
      expect(await temporalHas(created.id)).to.equal(false);
    });
  });

  it('isolation: another workspace’s schedule is 404 to every route, and absent from its list', async () => {
    const a = as((await newTenant(10)).api_key);
    const other = await newTenant(10);
    const b = as(other.api_key);
    const schedule = await newSchedule(a, { cron: '@daily', run: balance, paused: true });
    for (const attempt of [
      b.get(`/v1/run-schedules/${schedule.id}`),
      b.patch(`/v1/run-schedules/${schedule.id}`, { note: 'mine' }),
      b.post(`/v1/run-schedules/${schedule.id}/pause`, {}),
      b.post(`/v1/run-schedules/${schedule.id}/resume`),
      b.post(`/v1/run-schedules/${schedule.id}/trigger`),
      b.delete(`/v1/run-schedules/${schedule.id}`),
    ]) {
      expect((await attempt).status).to.equal(404);
    }
    expect((await b.get('/v1/run-schedules')).body.schedules).to.deep.equal([]);
    // Row-level security, beneath the API: the app role acting for the other workspace sees no row.
    const { runtime } = getStack();
    const seen = await runtime.uow({ workspaceId: other.workspace_id }, (m) =>
      m.query(`SELECT id FROM run_schedules WHERE id = $1`, [schedule.id]),
    );
    expect(seen).to.deep.equal([]);
    expect((await a.get('/v1/run-schedules')).body.schedules.map((row: any) => row.id)).to.deep.equal([schedule.id]);
    expect(await temporalHas(schedule.id)).to.equal(true);
  });

  it('validation: bad cron, interval, time zone or run is 422; no runs:write is 403; nothing is stored', async () => {
    const tenant = await newTenant(10);
    const client = as(tenant.api_key);
    const bad: [Record<string, unknown>, string][] = [
      [{ cron: '61 * * * *', run: balance }, 'cron'],
      [{ cron: '* * *', run: balance }, 'cron'],
      [{ cron: '@every 5m', run: balance }, 'cron'],
      [{ interval: '5 minutes', run: balance }, 'interval'],
      [{ interval: 0, run: balance }, 'interval'],
      [{ cron: '@daily', interval: 60, run: balance }, 'cron'],
      [{ run: balance }, 'cron'],
      [{ cron: '@daily', timezone: 'Mars/Olympus', run: balance }, 'timezone'],
      [{ cron: '@daily', run: { agent: 'playbook', input: { steps: [{ tool: 'no.such', input: {} }] } } }, 'run'],
      [{ cron: '@daily', run: balance, overlap: 'sometimes' }, 'overlap'],
      [{ cron: '@daily', run: { ...balance, idempotency_key: 'k' } }, 'run'],
    ];
    for (const [body, field] of bad) {
      const refused = await client.post('/v1/run-schedules', body);
      expect(refused.status, JSON.stringify(body)).to.equal(422);
      expect(
        refused.body.detail.map((issue: any) => issue.loc[1]),
        JSON.stringify(body),
      ).to.include(field);
    }
    const narrow = await as(tenant.user_jwt).post('/v1/auth/me/api-keys', {
      name: 'manage only',
      scopes: ['runs:read', 'schedules:manage'],
    });
    const forbidden = await as(narrow.body.token).post('/v1/run-schedules', { cron: '@daily', run: balance });
    expect(forbidden.status, forbidden.text).to.equal(403);
    expect((await client.get('/v1/run-schedules')).body.schedules).to.deep.equal([]);
  });
});
