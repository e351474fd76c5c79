import { expect } from 'chai';
import type { RunEvent } from '../src/client';
import { followRun, followWorkspaceRuns } from '../src/client';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { finished } from './helpers/runs';
import { openSse } from './helpers/sse';
import type { Stack } from './helpers/stack';
import { bootStack, getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

type Client = ReturnType<typeof as>;

const twoSteps = {
  agent: 'playbook',
  input: {
    steps: [
      { tool: 'billing.credits_balance', input: {} },
      { tool: 'agent.start_session', input: { name: 'evented' } },
    ],
  },
};
const gated = {
  agent: 'playbook',
  input: { steps: [{ tool: 'agent.start_session', input: { name: 'gated' }, requires_approval: true }] },
};

const dispatch = async (client: Client, body: unknown): Promise<string> => {
  const answer = await client.post('/v1/runs', body);
  expect(answer.status, answer.text).to.equal(202);
  return answer.body.execution_id;
};

/** A second API key of the JWT's user, who may approve what the first key dispatched. */
const reviewerKey = async (userJwt: string): Promise<string> =>
  (
    await as(userJwt).post('/v1/auth/me/api-keys', {
      name: 'reviewer',
      scopes: ['runs:read', 'runs:write', 'approvals:write', 'capabilities:write'],
    })
  ).body.token;

const typesOf = (events: { event: string; data: any }[]) =>
  events.map((e) => (e.event === 'run.status' ? `run.status:${e.data.data.status}` : e.event));

describe('run events: GET /v1/runs/{execution_id}/events (issue 26 part 1)', () => {
  it('replays a finished run to a late client, in order, with ids from 1, and ends after run.finished', async () => {
    const { api_key } = await newTenant(100);
    const client = as(api_key);
    const id = await dispatch(client, twoSteps);
    const run = await finished(client, id);
    expect(run.status).to.equal('SUCCEEDED');

    const stream = await openSse(`/v1/runs/${id}/events`, api_key);
    expect(stream.status).to.equal(200);
    const events = await stream.ended();
    expect(typesOf(events)).to.deep.equal([
      'run.status:QUEUED',
      'run.status:RUNNING',
      'step.started',
      'step.completed',
      'step.started',
      'step.completed',
      'run.status:SUCCEEDED',
      'run.finished',
    ]);
    expect(events.map((e) => Number(e.id))).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(events.every((e) => e.data.execution_id === id && e.data.id === Number(e.id))).to.equal(true);
    const completed = events.filter((e) => e.event === 'step.completed').map((e) => e.data.data);
    expect(completed.map((step) => step.tool)).to.deep.equal(['billing.credits_balance', 'agent.start_session']);
    expect(completed[1].output).to.deep.equal(run.steps[1].output);
    expect(events.at(-1)!.data.data).to.include({ status: 'SUCCEEDED', credits_charged: run.credits_charged });

    // Each step's event carries its own link of the verified chain; the others the head when they happened.
    const audit = (await client.get(`/v1/runs/${id}/audit`)).body;
    expect(audit.valid).to.equal(true);
    const links = new Map(audit.steps.map((link: any) => [link.seq, link.hash]));
    for (const e of events.filter((e) => e.event === 'step.completed')) {
      expect(e.data.audit.link).to.equal('own');
      expect(links.get(e.data.audit.seq)).to.equal(e.data.audit.hash);
    }
    expect(events[0]!.data.audit).to.equal(null);
    expect(events.at(-1)!.data.audit).to.deep.include({ link: 'head', seq: audit.length - 1, hash: audit.head_hash });
  });

  it('is followed by the typed client (followRun), live from dispatch to run.finished', async () => {
    const { api_key } = await newTenant(100);
    const id = await dispatch(as(api_key), twoSteps);
    const seen: RunEvent[] = [];
    for await (const event of followRun({ baseUrl: getStack().baseUrl, token: api_key }, id)) seen.push(event);
    expect(seen.map((event) => event.type)).to.include.members(['step.completed', 'run.finished']);
    expect(seen.at(-1)!.type).to.equal('run.finished');
    expect(seen.map((event) => event.id)).to.deep.equal(seen.map((_, at) => at + 1));
  });

  it('resumes after Last-Event-ID', async () => {
    const { api_key } = await newTenant(100);
    const id = await dispatch(as(api_key), twoSteps);
    await finished(as(api_key), id);
    const stream = await openSse(`/v1/runs/${id}/events`, api_key, { lastEventId: '5' });
    const events = await stream.ended();
    expect(events.map((e) => Number(e.id))).to.deep.equal([6, 7, 8]);
    expect(events.at(-1)!.event).to.equal('run.finished');

    const bad = await openSse(`/v1/runs/${id}/events`, api_key, { lastEventId: 'yesterday' });
    expect(bad.status).to.equal(400);
  });

  it('follows a run with an approval and a decision live, in commit order', async () => {
    const { api_key, user_jwt } = await newTenant(100);
    const client = as(api_key);
    const id = await dispatch(client, gated);
    const stream = await openSse(`/v1/runs/${id}/events`, api_key);
    const requested = await stream.until((e) => e.event === 'approval.requested', 'approval.requested');
    const decided = await client.post('/v1/cap/agent.record_decision', { execution_id: id, decision: 'go ahead' });
    expect(decided.status, decided.text).to.equal(200);
    await stream.until((e) => e.event === 'decision.recorded', 'decision.recorded');
    const resolved = await as(await reviewerKey(user_jwt)).post(
      `/v1/approvals/${requested.data.data.approval_id}/resolve`,
      { decision: 'APPROVED' },
    );
    expect(resolved.status, resolved.text).to.equal(200);
    const events = await stream.ended();
    expect(typesOf(events)).to.deep.equal([
      'run.status:QUEUED',
      'run.status:RUNNING',
      'approval.requested',
      'run.status:AWAITING_APPROVAL',
      'decision.recorded',
      'approval.resolved',
      'run.status:RUNNING',
      'step.started',
      'step.completed',
      'run.status:SUCCEEDED',
      'run.finished',
    ]);
    const ids = events.map((e) => Number(e.id));
    expect(ids).to.deep.equal([...ids].sort((a, b) => a - b));
    const decision = events.find((e) => e.event === 'decision.recorded')!.data;
    expect(decision.data.decision).to.equal('go ahead');
    expect(decision.audit.link).to.equal('own');
    expect(events.find((e) => e.event === 'approval.resolved')!.data.data.status).to.equal('approved');
  });

  it('ends a cancelled run’s stream after its cancelled approval and run.finished', async () => {
    const { api_key } = await newTenant(100);
    const client = as(api_key);
    const id = await dispatch(client, gated);
    const stream = await openSse(`/v1/runs/${id}/events`, api_key);
    await stream.until((e) => e.event === 'approval.requested', 'approval.requested');
    expect((await client.post(`/v1/runs/${id}/cancel`)).status).to.equal(200);
    const events = await stream.ended();
    expect(typesOf(events).slice(-3)).to.deep.equal(['run.status:CANCELLED', 'approval.resolved', 'run.finished']);
    expect(events.at(-1)!.data.data.status).to.equal('CANCELLED');
  });

  it('is a 404 for another workspace’s run, and a workspace stream shows only its own runs', async () => {
    const owner = await newTenant(100);
    const other = await newTenant(100);
    const id = await dispatch(as(owner.api_key), gated);
    const refused = await openSse(`/v1/runs/${id}/events`, other.api_key);
    expect(refused.status).to.equal(404);
    expect(refused.json.detail.error).to.equal('run_not_found');

    const watching = await openSse('/v1/runs/events', other.api_key);
    const mine = await openSse('/v1/runs/events?agent=playbook', owner.api_key);
    const own = await dispatch(as(other.api_key), twoSteps);
    await finished(as(other.api_key), own);
    await as(owner.api_key).post(`/v1/runs/${id}/cancel`);
    await watching.until((e) => e.event === 'run.finished' && e.data.execution_id === own, 'its own run.finished');
    await mine.until((e) => e.event === 'run.finished' && e.data.execution_id === id, 'the cancelled run.finished');
    watching.close();
    mine.close();
    expect(watching.events.every((e) => e.data.execution_id === own)).to.equal(true);
    expect(mine.events.every((e) => e.data.execution_id === id)).to.equal(true);
    // The workspace stream's ids are its sequence, increasing.
    const seqs = watching.events.map((e) => Number(e.id));
    expect(seqs).to.deep.equal([...seqs].sort((a, b) => a - b));
    // Last-Event-ID replays what came after that sequence.
    const replay = await openSse('/v1/runs/events', other.api_key, { lastEventId: String(seqs[4]) });
    await replay.until((e) => e.event === 'run.finished', 'the replayed run.finished');
    replay.close();
    expect(replay.events.map((e) => Number(e.id))).to.deep.equal(seqs.slice(5));
  });

  it('filters the workspace stream by tag', async () => {
    const { api_key } = await newTenant(100);
    const tagged = await openSse('/v1/runs/events?tag=nightly', api_key);
    const plain = await dispatch(as(api_key), twoSteps);
    const nightly = await dispatch(as(api_key), { ...twoSteps, tags: ['nightly', 'import'] });
    await finished(as(api_key), plain);
    await tagged.until((e) => e.event === 'run.finished' && e.data.execution_id === nightly, 'the tagged run.finished');
    tagged.close();
    expect(tagged.events.length).to.be.greaterThan(1);
    expect(tagged.events.every((e) => e.data.execution_id === nightly)).to.equal(true);
    const refused = await openSse('/v1/runs/events?tag=not%20a%20tag', api_key);
    expect(refused.status).to.equal(422);
  });

  it('catches up after the listener connection is lost', async function () {
    this.timeout(60_000);
    const { api_key, user_jwt } = await newTenant(100);
    const id = await dispatch(as(api_key), gated);
    const stream = await openSse(`/v1/runs/${id}/events`, api_key);
    const requested = await stream.until((e) => e.event === 'approval.requested', 'approval.requested');
    getStack().runtime.services.runEventsListener.dropConnection();
    await as(await reviewerKey(user_jwt)).post(`/v1/approvals/${requested.data.data.approval_id}/resolve`, {
      decision: 'APPROVED',
    });
    const events = await stream.ended();
    expect(events.at(-1)!.event).to.equal('run.finished');
    expect(events.map((e) => Number(e.id))).to.deep.equal(events.map((_, at) => at + 1));
  });
});

describe('run events: keep-alive comments', () => {
  let second: { stack: Stack; stop: () => Promise<void> } | undefined;
  before(async function () {
    this.timeout(120_000);
    second = await bootStack({ RUN_EVENTS_KEEPALIVE_MS: '150' });
  });
  after(async () => second?.stop());

  it('sends a comment at each keep-alive interval while the run is quiet', async () => {
    const { stack } = second!;
    const tenant = await stack.provisioning.bootstrap({ credits: 100 });
    const id = await dispatch(as(tenant.api_key, stack.baseUrl), gated);
    const stream = await openSse(`/v1/runs/${id}/events`, tenant.api_key, { baseUrl: stack.baseUrl });
    await stream.until((e) => e.event === 'approval.requested', 'approval.requested');
    const before = stream.comments.filter((c) => c === ': keep-alive').length;
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(stream.comments.filter((c) => c === ': keep-alive').length - before).to.be.at.least(3);
    stream.close();
    await as(tenant.api_key, stack.baseUrl).post(`/v1/runs/${id}/cancel`);
  });
});

// Issue 39 item 4 (review NM-1): a stream lives at most STREAM_MAX_LIFETIME_MS (1 h by default; 1 s here),
// then ends with a `reconnect` event whose id is where to resume; Last-Event-ID resumes without loss.
describe('run events: a stream’s lifetime, and resuming after it', () => {
  let short: { stack: Stack; stop: () => Promise<void> } | undefined;
  before(async function () {
    this.timeout(120_000);
    short = await bootStack({ STREAM_MAX_LIFETIME_MS: '1000' });
  });
  after(async () => short?.stop());

  const eventSeqs = async (executionId: string, column: 'id' | 'seq') =>
    (
      await short!.stack.ownerDataSource.query(
        `SELECT ${column}::int AS n FROM run_events WHERE execution_id = $1 ORDER BY ${column}`,
        [executionId],
      )
    ).map((row: { n: number }) => row.n);

  it('a run stream ends with reconnect at its lifetime; Last-Event-ID from its id gets the rest', async () => {
    const { stack } = short!;
    const tenant = await stack.provisioning.bootstrap({ credits: 100 });
    const client = as(tenant.api_key, stack.baseUrl);
    const id = await dispatch(client, gated);
    const first = await openSse(`/v1/runs/${id}/events`, tenant.api_key, { baseUrl: stack.baseUrl });
    const events = await first.ended();
    const last = events.at(-1)!;
    expect(last.event).to.equal('reconnect');
    const seen = events.slice(0, -1);
    expect(seen.map((e) => e.event)).to.include('approval.requested');
    expect(last.data.last_event_id).to.equal(Number(seen.at(-1)!.id));
    expect(last.id).to.equal(seen.at(-1)!.id);

    expect((await client.post(`/v1/runs/${id}/cancel`)).status).to.equal(200);
    await finished(client, id);
    const rest = await openSse(`/v1/runs/${id}/events`, tenant.api_key, {
      baseUrl: stack.baseUrl,
      lastEventId: last.id!,
    });
    const resumed = await rest.ended();
    expect(resumed.at(-1)!.event).to.equal('run.finished');
    expect([...seen, ...resumed].map((e) => Number(e.id))).to.deep.equal(await eventSeqs(id, 'id'));
  });

  it('the typed client follows a run and the workspace across lifetimes, missing and repeating nothing', async () => {
    const { stack } = short!;
    const tenant = await stack.provisioning.bootstrap({ credits: 100 });
    const client = as(tenant.api_key, stack.baseUrl);
    // Connections made, by stream (counted once the server has answered, so the stream is open).
    const connections = { workspace: 0, run: 0 };
    const counting: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      connections[String(input).includes('/v1/runs/events') ? 'workspace' : 'run'] += 1;
      return response;
    };
    const options = { baseUrl: stack.baseUrl, token: tenant.api_key, fetch: counting };
    const abort = new AbortController();
    const workspace: RunEvent[] = [];
    const watching = (async () => {
      for await (const event of followWorkspaceRuns(options, { tag: 'lifetime' }, { signal: abort.signal })) {
        workspace.push(event);
        if (event.type === 'run.finished') return;
      }
    })();
    // The workspace stream starts live from when it opened: open before the run.
    await eventually(() => connections.workspace > 0, { what: 'the workspace stream to open' });
    const id = await dispatch(client, { ...gated, tags: ['lifetime'] });
    const run: RunEvent[] = [];
    for await (const event of followRun(options, id, { signal: abort.signal })) {
      run.push(event);
      // Cancelled once both streams have reached their lifetime and resumed at least once.
      if (event.type === 'approval.requested') {
        void eventually(() => connections.workspace >= 2 && connections.run >= 2, {
          what: 'both streams to resume',
          timeoutMs: 20_000,
        }).then(() => client.post(`/v1/runs/${id}/cancel`));
      }
    }
    await watching;
    abort.abort();
    expect(run.at(-1)!.type).to.equal('run.finished');
    expect(run.map((event) => event.id)).to.deep.equal(await eventSeqs(id, 'id'));
    expect(workspace.map((event) => event.seq)).to.deep.equal(await eventSeqs(id, 'seq'));
  });
});
