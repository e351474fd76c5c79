import type { Interrupt } from '@ag-ui/core';
import { expect } from 'chai';
import { agentOf, parsedEvents, refusal, typesOf } from './helpers/ag-ui';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { finished, pendingApproval } from './helpers/runs';
import { newMember, newTenant } from './helpers/tenants';

const GOAL = 'Remember that Ada Lovelace works at Analytical Engines Ltd.';

/** A playbook run that waits on two `run.wait_for` waitpoints, one after the other. */
const TWO_WAITS = {
  agent: 'playbook',
  input: {
    steps: [
      {
        tool: 'run.wait_for',
        input: {
          name: 'invoice approved',
          timeout_seconds: 3600,
          output_schema: { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean' } } },
        },
      },
      { tool: 'run.wait_for', input: { name: 'shipped', timeout_seconds: 3600 } },
    ],
  },
};

/** A playbook run that waits for an approval until it is resolved or cancelled. */
const GATED = {
  agent: 'playbook',
  input: { steps: [{ tool: 'agent.start_session', input: { name: 'gated' }, requires_approval: true }] },
};

const approve = (interruptId: string) => [
  { interruptId, status: 'resolved' as const, payload: { decision: 'approve' } },
];

/** The interrupts of a stream's last event: RUN_FINISHED with outcome interrupt. */
const interruptsOf = (events: any[]): Interrupt[] => {
  expect(events.at(-1)).to.deep.include({ type: 'RUN_FINISHED' });
  expect(events.at(-1).outcome.type).to.equal('interrupt');
  return events.at(-1).outcome.interrupts;
};

/** Whether `list` holds `wanted` in this order (other items between them). */
const subsequence = (list: string[], wanted: string[]) => {
  let at = 0;
  for (const item of list) if (item === wanted[at]) at += 1;
  return at === wanted.length;
};

describe('AG-UI interrupts: answering and cancelling a run from an AG-UI client (issue 42 item 3)', () => {
  it('an approval ends the AG-UI run with an interrupt; a colleague resumes it, the dispatcher cannot', async () => {
    const owner = await newTenant(50);
    const colleague = await newMember(owner.workspace_id);
    const mine = agentOf(owner.api_key, GOAL);
    await mine.agent.runAgent({ runId: 'asks' });

    const asked = parsedEvents(await mine.raw[0]!);
    expect(typesOf(asked).at(-2)).to.equal('CUSTOM:weft.approval_requested');
    const [interrupt] = interruptsOf(asked);
    const executionId = (asked[0] as any).runId as string;
    const approvalId = (await pendingApproval(as(owner.api_key), executionId)).approval_id;
    expect(interrupt).to.deep.include({
      id: approvalId,
      reason: 'weft.approval',
      message: 'Approve ontology.remember (step 0)?',
    });
    expect(interrupt!.metadata).to.deep.include({ execution_id: executionId, tool: 'ontology.remember', step_no: 0 });
    expect(interrupt!.responseSchema).to.deep.include({ required: ['decision'] });
    expect(mine.agent.pendingInterrupts.map((one) => one.id)).to.deep.equal([approvalId]);

    // The credential that dispatched the run never approves it: 403 in problem+json, nothing streamed.
    const byDispatcher = await refusal(mine.agent.runAgent({ resume: approve(approvalId) }));
    expect(byDispatcher.status).to.equal(403);
    expect(byDispatcher.problem.detail).to.deep.include({ error: 'approval_by_dispatcher' });
    // Nor its user through another credential, with a colleague in the workspace; nor a key without approvals:write.
    const input = { threadId: mine.agent.threadId, runId: 'by-me', messages: [], resume: approve(approvalId) };
    const byUser = await as(owner.user_jwt).post('/v1/ag-ui', input);
    expect(byUser.status).to.equal(403);
    expect(byUser.body.detail).to.deep.include({ error: 'approval_by_dispatching_user' });
    const scopes = ['runs:read', 'runs:write'];
    const reader = (await as(colleague.user_jwt).post('/v1/auth/me/api-keys', { name: 'no-approvals', scopes })).body;
    const unscoped = await as(reader.token).post('/v1/ag-ui', input);
    expect(unscoped.status).to.equal(403);
    expect(unscoped.body.detail).to.match(/approvals:write/);
    // A payload the approval cannot take is 422 where it is.
    const bad = await as(colleague.api_key).post('/v1/ag-ui', {
      ...input,
      resume: [{ interruptId: approvalId, status: 'resolved', payload: { decision: 'maybe' } }],
    });
    expect(bad.status).to.equal(422);
    expect(bad.body.detail[0].loc).to.deep.equal(['body', 'resume', 0, 'payload', 'decision']);
    expect((await pendingApproval(as(owner.api_key), executionId)).status).to.equal('pending');

    // A colleague's HttpAgent in the same thread answers; its stream is the rest of the same run.
    const theirs = agentOf(colleague.api_key, GOAL, mine.agent.threadId);
    const answered = await theirs.agent.runAgent({ runId: 'answers', resume: approve(approvalId) });
    const rest = parsedEvents(await theirs.raw[0]!);
    const run = await finished(as(owner.api_key), executionId);
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.approvals[0]).to.deep.include({ status: 'approved', resolved_by: colleague.user_id });
    expect(rest[0]).to.deep.include({ type: 'RUN_STARTED', runId: executionId, threadId: mine.agent.threadId });
    const types = typesOf(rest);
    expect(
      subsequence(types, ['RUN_STARTED', 'CUSTOM:weft.approval_resolved', 'STEP_STARTED', 'RUN_FINISHED']),
    ).to.equal(true);
    expect(types.filter((type) => type === 'RUN_STARTED')).to.have.length(1);
    for (const type of [
      'STEP_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_RESULT',
      'STEP_FINISHED',
      'TEXT_MESSAGE_CONTENT',
    ]) {
      expect(types).to.include(type);
    }
    expect(rest.at(-1)).to.deep.include({ type: 'RUN_FINISHED', runId: executionId, result: run.output });
    expect(answered.result).to.deep.equal(run.output);
    // Nothing of what the first AG-UI run sent comes again.
    expect(rest.filter((event: any) => event.name === 'weft.approval_requested')).to.deep.equal([]);

    // The dispatcher's client sets its interrupt aside (someone else answered) and reads the end of the run.
    await mine.agent.runAgent({ resume: [{ interruptId: approvalId, status: 'cancelled' }] });
    const seen = parsedEvents(await mine.raw.at(-1)!);
    expect(seen.slice(1)).to.deep.equal(rest.slice(1));
    expect(mine.agent.pendingInterrupts).to.deep.equal([]);
    // Answered already: a second answer is 409, as on the REST route.
    const again = await as(colleague.api_key).post('/v1/ag-ui', { ...input, runId: 'again' });
    expect(again.status).to.equal(409);
  });

  it('a run.wait_for waitpoint is an interrupt answered with its output; the run goes on to the next', async () => {
    const { api_key } = await newTenant(50);
    const client = as(api_key);
    const executionId = (await client.post('/v1/runs', TWO_WAITS)).body.execution_id;
    // The run is WAITING once its waitpoint.created is in its log (the waitpoint is made just before).
    const waiting = (stepNo: number) =>
      eventually(
        async () =>
          (await client.get(`/v1/runs/${executionId}`)).body.status === 'WAITING' &&
          (await client.get(`/v1/waitpoints?execution_id=${executionId}&status=waiting`)).body.waitpoints.find(
            (wp: any) => wp.step_no === stepNo,
          ),
        { what: `the waitpoint of step ${stepNo}` },
      );
    const first = await waiting(0);
    // A run started elsewhere is its own thread: the thread id is its execution_id.
    const { agent, raw } = agentOf(api_key, 'not read', executionId);
    const refused = await refusal(
      agent.runAgent({ resume: [{ interruptId: first.waitpoint_id, status: 'resolved', payload: { ok: 'yes' } }] }),
    );
    expect(refused.status).to.equal(422);
    expect(refused.problem.detail[0].loc).to.deep.equal(['body', 'output', 'ok']);

    await agent.runAgent({ resume: [{ interruptId: first.waitpoint_id, status: 'resolved', payload: { ok: true } }] });
    const events = parsedEvents(await raw.at(-1)!);
    expect(events[0]).to.deep.include({ type: 'RUN_STARTED', runId: executionId, threadId: executionId });
    const second = await waiting(1);
    const [interrupt] = interruptsOf(events);
    const run = (await client.get(`/v1/runs/${executionId}`)).body;
    expect(interrupt).to.deep.include({
      id: second.waitpoint_id,
      reason: 'weft.waitpoint',
      toolCallId: run.steps[1].step_id,
    });
    // The first wait's step, open when the stream began, finishes in it; the second's is closed at the interrupt.
    expect(
      subsequence(typesOf(events), [
        'RUN_STARTED',
        'STEP_STARTED',
        'CUSTOM:weft.waitpoint_completed',
        'TOOL_CALL_RESULT',
        'STEP_FINISHED',
        'STEP_STARTED',
        'TOOL_CALL_END',
        'CUSTOM:weft.waitpoint_created',
        'STEP_FINISHED',
        'RUN_FINISHED',
      ]),
    ).to.equal(true);
    const result = events.find((event) => event.type === 'TOOL_CALL_RESULT') as any;
    expect(result.toolCallId).to.equal(run.steps[0].step_id);

    await agent.runAgent({ resume: [{ interruptId: second.waitpoint_id, status: 'resolved', payload: 'INV-1' }] });
    const end = parsedEvents(await raw.at(-1)!);
    const done = await finished(client, executionId);
    expect(done.status).to.equal('SUCCEEDED');
    expect(end.at(-1)).to.deep.include({ type: 'RUN_FINISHED', runId: executionId });
    expect((end.at(-1) as any).outcome?.type ?? 'success').to.equal('success');
  });

  it('cancels from the client: `forwardedProps.command: cancel`, its interrupts set aside or by thread', async () => {
    const { api_key } = await newTenant(50);
    const { agent, raw } = agentOf(api_key, GOAL);
    await agent.runAgent();
    const [interrupt] = interruptsOf(parsedEvents(await raw[0]!));
    const executionId = interrupt!.metadata!.execution_id as string;
    // An answer with a cancel is refused: the cancel answers nothing.
    const mixed = await refusal(
      agent.runAgent({ resume: approve(interrupt!.id), forwardedProps: { command: 'cancel' } }),
    );
    expect(mixed.status).to.equal(422);
    await agent.runAgent({
      resume: [{ interruptId: interrupt!.id, status: 'cancelled' }],
      forwardedProps: { command: 'cancel' },
    });
    const events = parsedEvents(await raw.at(-1)!);
    expect(events[0]).to.deep.include({ type: 'RUN_STARTED', runId: executionId });
    expect((events.find((event: any) => event.name === 'weft.approval_resolved') as any).value.status).to.equal(
      'cancelled',
    );
    expect(events.at(-1)).to.deep.include({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' } });
    expect((await finished(as(api_key), executionId)).status).to.equal('CANCELLED');

    // By thread alone: the thread's unfinished run (here one started over REST, whose thread is its id).
    const gated = (await as(api_key).post('/v1/runs', GATED)).body.execution_id;
    await pendingApproval(as(api_key), gated);
    const other = agentOf(api_key, 'not read', gated);
    await other.agent.runAgent({ forwardedProps: { command: 'cancel' } });
    expect(parsedEvents(await other.raw[0]!).at(-1)).to.deep.include({
      type: 'RUN_FINISHED',
      outcome: { type: 'cancelled' },
    });
    expect((await finished(as(api_key), gated)).status).to.equal('CANCELLED');
    // Again: the cancelled run's end, once more.
    await other.agent.runAgent({ forwardedProps: { command: 'cancel' } });
    expect(typesOf(parsedEvents(await other.raw.at(-1)!))).to.deep.equal(['RUN_STARTED', 'RUN_FINISHED']);
  });

  it('refuses another workspace’s interrupt ids and runs: 404, and the victim’s run still waits', async () => {
    const victim = await newTenant(50);
    const executionId = (await as(victim.api_key).post('/v1/runs', GATED)).body.execution_id;
    const { approval_id } = await pendingApproval(as(victim.api_key), executionId);
    const attacker = await newTenant(50);
    for (const threadId of [executionId, 'any-thread']) {
      const body = { threadId, runId: `steal-${threadId}`, messages: [], resume: approve(approval_id) };
      const answer = await as(attacker.user_jwt).post('/v1/ag-ui', body);
      expect(answer.status).to.equal(404);
      expect(answer.body.detail).to.deep.include({ error: 'interrupt_not_found' });
    }
    const cancel = await as(attacker.api_key).post('/v1/ag-ui', {
      threadId: executionId,
      runId: 'cancel-theirs',
      messages: [],
      forwardedProps: { command: 'cancel' },
    });
    expect(cancel.status).to.equal(404);
    // The victim's own colleague-less thread: another thread's id does not reach it either.
    const elsewhere = await as(victim.user_jwt).post('/v1/ag-ui', {
      threadId: 'another-thread',
      runId: 'wrong-thread',
      messages: [],
      resume: approve(approval_id),
    });
    expect(elsewhere.status).to.equal(404);
    const run = (await as(victim.api_key).get(`/v1/runs/${executionId}`)).body;
    expect(run.status).to.equal('AWAITING_APPROVAL');
    await as(victim.api_key).post(`/v1/runs/${executionId}/cancel`);
  });
});
