import { expect } from 'chai';
import { LIMITS } from '../src/rules/limits';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { succeeded } from './helpers/runs';
import { bootStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

const balance = { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance', input: {} }] } };

// Issue 43 item 3 (review NM-7: 100 schedules a workspace, each firing every second, free and unlimited).
describe('run schedules are shared fairly (issue 43 item 3)', function () {
  this.timeout(120_000);
  let booted: Awaited<ReturnType<typeof bootStack>>;
  const made: { client: ReturnType<typeof as>; id: string }[] = [];
  before(async function () {
    this.timeout(60_000);
    // The deployment's default minimum (the suite's stack lowers it), and a small hourly cap.
    booted = await bootStack({ SCHEDULE_MIN_INTERVAL_SECONDS: '', SCHEDULE_FIRES_PER_HOUR: '2' });
  });
  after(async function () {
    this.timeout(60_000);
    for (const { client, id } of made) await client.delete(`/v1/run-schedules/${id}`);
    await booted?.stop();
  });

  const clientOf = (token: string) => as(token, booted.stack.baseUrl);

  it('an interval or a cron shorter than the deployment minimum is 422 naming the field', async () => {
    expect(booted.stack.config.SCHEDULE_MIN_INTERVAL_SECONDS).to.equal(LIMITS.schedules.minIntervalSeconds);
    const tenant = await newTenant(10);
    const client = clientOf(tenant.user_jwt);
    for (const [body, field] of [
      [{ interval: '30s', run: balance }, 'interval'],
      [{ interval: 59, run: balance }, 'interval'],
      [{ cron: '0,30 * * * *', run: balance }, null],
      [{ cron: '* * * * *', run: balance }, null],
    ] as const) {
      const created = await client.post('/v1/run-schedules', { ...body, paused: true });
      if (field === null) {
        // A cron fires at most once a minute: the default minimum allows every one.
        expect(created.status, created.text).to.equal(201);
        made.push({ client, id: created.body.id });
        continue;
      }
      expect(created.status, created.text).to.equal(422);
      expect(created.body.detail[0].loc).to.deep.equal(['body', field]);
      expect(created.body.detail[0].msg).to.match(/minimum interval is 60 s/);
    }
    const ok = await client.post('/v1/run-schedules', { interval: '1m', run: balance, paused: true });
    expect(ok.status, ok.text).to.equal(201);
    made.push({ client, id: ok.body.id });
    const shorter = await client.patch(`/v1/run-schedules/${ok.body.id}`, { interval: 10 });
    expect(shorter.status, shorter.text).to.equal(422);
    expect(shorter.body.detail[0].loc).to.deep.equal(['body', 'interval']);
    expect((await client.get(`/v1/run-schedules/${ok.body.id}`)).body.interval_seconds).to.equal(60);
  });

  it('past the workspace’s fires per hour a fire is skipped and recorded; another workspace still fires', async () => {
    const tenant = await newTenant(10);
    const client = clientOf(tenant.user_jwt);
    const created = await client.post('/v1/run-schedules', {
      cron: '0 3 1 1 *',
      run: balance,
      overlap: 'allow',
      paused: true,
    });
    expect(created.status, created.text).to.equal(201);
    made.push({ client, id: created.body.id });
    const id = created.body.id;
    const runs = async () => (await client.get(`/v1/runs?schedule_id=${id}`)).body.runs as any[];
    // A fire's workflow id carries its time to the second: two triggers within one second would be one fire.
    let lastTrigger = 0;
    const trigger = async () => {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1100 - (Date.now() - lastTrigger))));
      lastTrigger = Date.now();
      return client.post(`/v1/run-schedules/${id}/trigger`);
    };
    for (let fire = 1; fire <= 2; fire++) {
      expect((await trigger()).status).to.equal(202);
      const seen = await eventually(
        async () => {
          const read = await client.get(`/v1/run-schedules/${id}`);
          return (await runs()).length === fire || read.body.last_refusal ? read.body : undefined;
        },
        { what: `run ${fire}` },
      );
      expect(seen.last_refusal, 'no fire within the cap is refused').to.equal(null);
    }
    for (const run of await runs()) await succeeded(client, run.execution_id);
    // The third fire in the hour dispatches nothing; the schedule says why, and Weft does not pause it for that.
    expect((await trigger()).status).to.equal(202);
    const refused = await eventually(
      async () => {
        const read = await client.get(`/v1/run-schedules/${id}`);
        return read.body.last_refusal ? read.body : undefined;
      },
      { what: 'the skipped fire recorded' },
    );
    expect(refused.last_refusal.reason).to.match(/^fires_per_hour: .* 2 runs in the last hour/);
    expect(refused.note).to.equal(null);
    expect(await runs()).to.have.length(2);

    // The cap is the workspace's own: another workspace's schedule fires.
    const other = await newTenant(10);
    const theirs = clientOf(other.user_jwt);
    const schedule = await theirs.post('/v1/run-schedules', { cron: '0 3 1 1 *', run: balance, paused: true });
    made.push({ client: theirs, id: schedule.body.id });
    await theirs.post(`/v1/run-schedules/${schedule.body.id}/trigger`);
    await eventually(
      async () => (await theirs.get(`/v1/runs?schedule_id=${schedule.body.id}`)).body.runs.length === 1,
      { what: 'the other workspace’s run' },
    );
  });
});
