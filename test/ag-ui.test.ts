import type { BaseEvent } from '@ag-ui/client';
import { EventSchemas } from '@ag-ui/core/schemas';
import { expect } from 'chai';
import { agentOf as agentOfGoal, parsedEvents, typesOf } from './helpers/ag-ui';
import { as } from './helpers/http';
import { finished, pendingApproval } from './helpers/runs';
import type { SseFrame } from './helpers/sse';
import { openSse } from './helpers/sse';
import { bootStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

const GOAL = 'Remember that Ada Lovelace works at Analytical Engines Ltd.';

const agentOf = (token: string, goal = GOAL, threadId?: string) => agentOfGoal(token, goal, threadId);

/** A playbook run that waits for an approval until it is resolved or cancelled. */
const GATED = {
  agent: 'playbook',
  input: { steps: [{ tool: 'agent.start_session', input: { name: 'gated' }, requires_approval: true }] },
};

describe('AG-UI: POST /v1/ag-ui and ?format=ag-ui (issue 42 item 3)', () => {
  let shared: { api_key: string; executionId: string; threadId: string; events: any[] };

  it('runs an llm run for HttpAgent: a tool call, its approval and the answer, every event valid AG-UI', async () => {
    const { api_key, user_jwt } = await newTenant(50);
    const { agent, raw } = agentOf(api_key);
    const seen: BaseEvent[] = [];
    const approvals: Promise<unknown>[] = [];
    // `interrupts: false`: the stream goes on through the approval, a CUSTOM event only (ag-ui-interrupts.test.ts
    // answers it the AG-UI way).
    const result = await agent.runAgent(
      { runId: 'ag-ui-run-1', forwardedProps: { interrupts: false } },
      {
        onEvent: ({ event }) => {
          seen.push(event);
        },
        // The run waits for a person: the reviewer approves from the event's approval id.
        onCustomEvent: ({ event }) => {
          if (event.name !== 'weft.approval_requested') return;
          approvals.push(
            as(user_jwt).post(`/v1/approvals/${event.value.approval_id}/resolve`, { decision: 'APPROVED' }),
          );
        },
      },
    );
    expect((await Promise.all(approvals)).map((answer: any) => answer.status)).to.deep.equal([200]);

    const events = parsedEvents(await raw[0]!);
    expect(typesOf(events)).to.deep.equal([
      'RUN_STARTED',
      'CUSTOM:weft.run_status',
      'CUSTOM:weft.run_status',
      'CUSTOM:weft.approval_requested',
      'CUSTOM:weft.run_status',
      'CUSTOM:weft.approval_resolved',
      'CUSTOM:weft.run_status',
      'STEP_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'STEP_FINISHED',
      'CUSTOM:weft.run_status',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    expect(typesOf(seen as any)).to.deep.equal(typesOf(events));
    const started = events[0] as any;
    expect(started.threadId).to.equal(agent.threadId);
    const executionId: string = started.runId;
    const run = await finished(as(api_key), executionId);
    expect(run).to.include({ status: 'SUCCEEDED', agent: 'llm' });
    expect(run.input.goal).to.equal(GOAL);
    expect(run.tags).to.include.members(['ag-ui', `ag-ui-thread:${agent.threadId}`]);

    const call = events.find((event) => event.type === 'TOOL_CALL_START') as any;
    expect(call).to.include({ toolCallId: run.steps[0].step_id, toolCallName: 'ontology.remember' });
    const args = events.find((event) => event.type === 'TOOL_CALL_ARGS') as any;
    expect(JSON.parse(args.delta)).to.deep.equal(run.steps[0].input);
    const answered = events.find((event) => event.type === 'TOOL_CALL_RESULT') as any;
    expect(JSON.parse(answered.content)).to.deep.equal(run.steps[0].output);
    const requested = events.find((event: any) => event.name === 'weft.approval_requested') as any;
    expect(requested.value).to.include({ approval_id: run.approvals[0].approval_id, tool: 'ontology.remember' });
    const text = events.find((event) => event.type === 'TEXT_MESSAGE_CONTENT') as any;
    expect(text.delta).to.equal(run.output.answer);
    expect(events.at(-1)).to.deep.include({ runId: executionId, result: run.output });

    // The client assembled the conversation: the tool call, its result, and the assistant's answer.
    const assistant = result.newMessages.filter((message) => message.role === 'assistant');
    expect(assistant.flatMap((message: any) => message.toolCalls ?? []).map((c: any) => c.function.name)).to.include(
      'ontology.remember',
    );
    expect(assistant.map((message: any) => message.content)).to.include(run.output.answer);
    expect(result.newMessages.some((message) => message.role === 'tool')).to.equal(true);
    shared = { api_key, executionId, threadId: agent.threadId, events };
  });

  it('streams the same run again with ?format=ag-ui, and resumes after Last-Event-ID', async () => {
    const { api_key, executionId, events, threadId } = shared;
    const stream = await openSse(`/v1/runs/${executionId}/events?format=ag-ui`, api_key);
    expect(stream.status).to.equal(200);
    const frames = await stream.ended();
    const replayed = frames.map((frame) => EventSchemas.parse(frame.data));
    expect(replayed).to.deep.equal(events);

    // Each run event's last AG-UI event carries its id: resuming after the step's start sends what follows it.
    const toolCallEnd = frames.findIndex((frame) => frame.data.type === 'TOOL_CALL_END');
    const cursor = frames[toolCallEnd]!.id!;
    expect(cursor).to.match(/^\d+$/);
    const resumed = await openSse(`/v1/runs/${executionId}/events?format=ag-ui`, api_key, { lastEventId: cursor });
    const rest = (await resumed.ended()).map((frame: SseFrame) => EventSchemas.parse(frame.data));
    expect(rest).to.deep.equal(events.slice(toolCallEnd + 1));
    expect(typesOf(rest).slice(0, 2)).to.deep.equal(['TOOL_CALL_RESULT', 'STEP_FINISHED']);

    // The same runId again (in the same thread) follows the run it started: no second run.
    const again = agentOf(api_key, GOAL, threadId);
    await again.agent.runAgent({ runId: 'ag-ui-run-1' });
    const repeat = parsedEvents(await again.raw[0]!);
    expect((repeat[0] as any).runId).to.equal(executionId);
    // The same runId in another thread is another request: refused before any stream.
    const reused = await as(api_key).post('/v1/ag-ui', {
      threadId: 'another-thread',
      runId: 'ag-ui-run-1',
      messages: [{ id: 'm1', role: 'user', content: GOAL }],
    });
    expect(reused.status).to.equal(409);
    expect(reused.body.detail.error).to.equal('idempotency_key_reused');
    const runs = await as(api_key).get('/v1/runs?tag=ag-ui');
    expect(runs.body.runs.map((run: any) => run.execution_id)).to.deep.equal([executionId]);
  });

  it('is 404 for another workspace’s run, and an attacker’s runId starts a run of its own', async () => {
    const { executionId } = shared;
    const attacker = await newTenant(50);
    const stream = await openSse(`/v1/runs/${executionId}/events?format=ag-ui`, attacker.api_key);
    expect(stream.status).to.equal(404);
    expect(stream.json.detail).to.include({ error: 'run_not_found' });
    const { agent, raw } = agentOf(attacker.api_key, 'what is my balance');
    await agent.runAgent({ runId: 'ag-ui-run-1' });
    const events = parsedEvents(await raw[0]!);
    expect((events[0] as any).runId).to.not.equal(executionId);
    expect(events.every((event: any) => JSON.stringify(event).indexOf(executionId) < 0)).to.equal(true);
  });

  it('ends a run cancelled while it waits for approval with RUN_FINISHED, outcome cancelled', async () => {
    const { api_key } = await newTenant(50);
    const { agent, raw } = agentOf(api_key);
    const cancels: Promise<{ status: number }>[] = [];
    let executionId = '';
    await agent.runAgent(
      { forwardedProps: { interrupts: false } },
      {
        onRunStartedEvent: ({ event }) => {
          executionId = event.runId;
        },
        onCustomEvent: ({ event }) => {
          if (event.name === 'weft.approval_requested')
            cancels.push(as(api_key).post(`/v1/runs/${executionId}/cancel`));
        },
      },
    );
    expect((await Promise.all(cancels)).map((answer) => answer.status)).to.deep.equal([200]);
    const events = parsedEvents(await raw[0]!);
    const resolved = events.find((event: any) => event.name === 'weft.approval_resolved') as any;
    expect(resolved.value.status).to.equal('cancelled');
    expect(events.at(-1)).to.deep.include({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' } });
  });

  it('ends a stream whose credential was revoked with RUN_ERROR credential_revoked', async () => {
    const { api_key, user_jwt } = await newTenant(50);
    const client = as(api_key);
    const id = (await client.post('/v1/runs', GATED)).body.execution_id;
    const reader = (await as(user_jwt).post('/v1/auth/me/api-keys', { name: 'reader', scopes: ['runs:read'] })).body;
    const stream = await openSse(`/v1/runs/${id}/events?format=ag-ui`, reader.token);
    await stream.until((frame) => frame.data.name === 'weft.approval_requested', 'the approval');
    expect((await as(user_jwt).delete(`/v1/auth/me/api-keys/${reader.id}`)).status).to.equal(200);
    // The next event makes the stream read, as its revoked credential: refused, it ends.
    await client.post('/v1/cap/agent.record_decision', { execution_id: id, decision: 'wait' });
    const frames = await stream.ended();
    for (const frame of frames) EventSchemas.parse(frame.data);
    expect(frames.at(-1)!.data).to.include({ type: 'RUN_ERROR', code: 'credential_revoked' });
    expect(frames.map((frame) => frame.data.name)).not.to.include('weft.decision_recorded');
    await client.post(`/v1/runs/${id}/cancel`);
  });

  it('refuses a RunAgentInput the AG-UI schema or Weft refuses (422), and a key without runs:read (403)', async () => {
    const { api_key, user_jwt } = await newTenant(50);
    const client = as(api_key);
    const base = { threadId: 't1', runId: 'r1', messages: [{ id: 'm1', role: 'user', content: 'hello' }] };
    const noMessages = await client.post('/v1/ag-ui', { threadId: 't1', runId: 'r1' });
    expect(noMessages.status).to.equal(422);
    expect(noMessages.body.detail[0].loc).to.deep.equal(['body', 'messages']);
    const badRole = await client.post('/v1/ag-ui', { ...base, messages: [{ id: 'm1', role: 'wizard', content: 'x' }] });
    expect(badRole.status).to.equal(422);
    expect(badRole.body.detail[0].loc.slice(0, 3)).to.deep.equal(['body', 'messages', 0]);
    const noUser = await client.post('/v1/ag-ui', {
      ...base,
      messages: [{ id: 'm1', role: 'assistant', content: 'hi' }],
    });
    expect(noUser.status).to.equal(422);
    expect(noUser.body.detail[0].msg).to.match(/last user message/);
    const tooLong = await client.post('/v1/ag-ui', {
      ...base,
      messages: [{ id: 'm1', role: 'user', content: 'x'.repeat(4001) }],
    });
    expect(tooLong.status).to.equal(422);
    expect(tooLong.body.detail[0].loc).to.deep.equal(['body', 'messages', 0, 'content']);

    const writeOnly = (await as(user_jwt).post('/v1/auth/me/api-keys', { name: 'write-only', scopes: ['runs:write'] }))
      .body.token;
    const refused = await as(writeOnly).post('/v1/ag-ui', base);
    expect(refused.status).to.equal(403);
    const readOnly = (await as(user_jwt).post('/v1/auth/me/api-keys', { name: 'read-only', scopes: ['runs:read'] }))
      .body.token;
    expect((await as(readOnly).post('/v1/ag-ui', base)).status).to.equal(403);
    // Nothing was dispatched by a refused request.
    expect((await client.get('/v1/runs?tag=ag-ui')).body.runs).to.deep.equal([]);
  });
});

// A stream lives at most STREAM_MAX_LIFETIME_MS (1 s here): an AG-UI stream then ends with CUSTOM
// weft.reconnect, whose id is the Last-Event-ID to resume from, and the resumed stream misses nothing.
describe('AG-UI: a stream’s lifetime, and resuming after it', () => {
  let short: Awaited<ReturnType<typeof bootStack>> | undefined;
  before(async function () {
    this.timeout(120_000);
    short = await bootStack({ STREAM_MAX_LIFETIME_MS: '1000' });
  });
  after(async () => short?.stop());

  it('ends with CUSTOM weft.reconnect at its lifetime; Last-Event-ID from its id gets the rest', async () => {
    const { stack } = short!;
    const tenant = await stack.provisioning.bootstrap({ credits: 100 });
    const client = as(tenant.api_key, stack.baseUrl);
    const id = (await client.post('/v1/runs', GATED)).body.execution_id;
    await pendingApproval(client, id);
    const path = `/v1/runs/${id}/events?format=ag-ui`;
    const first = await (await openSse(path, tenant.api_key, { baseUrl: stack.baseUrl })).ended();
    const last = first.at(-1)!;
    expect(last.data).to.deep.include({ type: 'CUSTOM', name: 'weft.reconnect' });
    expect(last.id).to.equal(String(last.data.value.last_event_id));
    expect(first.map((frame) => frame.data.name)).to.include('weft.approval_requested');

    expect((await client.post(`/v1/runs/${id}/cancel`)).status).to.equal(200);
    const rest = await (await openSse(path, tenant.api_key, { baseUrl: stack.baseUrl, lastEventId: last.id! })).ended();
    const events = [...first.slice(0, -1), ...rest].map((frame) => EventSchemas.parse(frame.data));
    const whole = await (await openSse(path, tenant.api_key, { baseUrl: stack.baseUrl })).ended();
    expect(events).to.deep.equal(whole.map((frame) => EventSchemas.parse(frame.data)));
    expect(typesOf(events).filter((type) => type === 'RUN_STARTED')).to.have.length(1);
    expect(events.at(-1)).to.deep.include({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' } });
  });
});
