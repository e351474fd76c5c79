import { TaskState } from '@a2a-js/sdk';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { expect } from 'chai';
import { a2aClient, asTask, bearerFetch, collect, sendRequest, statesOf, userMessage } from './helpers/a2a';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { finished } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newMember, newTenant } from './helpers/tenants';

type A2AClient = Awaited<ReturnType<typeof a2aClient>>;

/** The JSON-RPC error a client call was refused with: its code and message. */
async function refusal(call: Promise<unknown>): Promise<{ name: string; code?: number; message: string }> {
  try {
    await call;
  } catch (error) {
    const { name, message, envelopeCode, errorResponse } = error as {
      name: string;
      message: string;
      envelopeCode?: number;
      errorResponse?: { error: { code: number } };
    };
    return { name, message, code: errorResponse?.error.code ?? envelopeCode };
  }
  throw new Error('expected the call to be refused');
}

/** Starts an llm run whose every tool call waits for approval; answers it once it asks (input-required). */
async function gatedTask(client: A2AClient) {
  const message = userMessage('what is my credit balance', { metadata: { approval: 'all' } });
  return asTask(await client.sendMessage(sendRequest(message)));
}

describe('A2A (issue 42 item 2): runs as tasks through @a2a-js/sdk', function () {
  this.timeout(60_000);

  it('publishes an Agent Card the SDK discovers: JSON-RPC at /a2a, streaming, push, bearer, skills', async () => {
    const { api_key } = await newTenant();
    const client = await a2aClient(api_key);
    const card = await client.getAgentCard();
    expect(card.name).to.equal('Weft');
    expect(card.capabilities).to.include({ streaming: true, pushNotifications: true });
    expect(card.supportedInterfaces.map((i) => [i.protocolBinding, i.protocolVersion])).to.deep.include.members([
      ['JSONRPC', '1.0'],
      ['JSONRPC', '0.3'],
    ]);
    expect(card.supportedInterfaces[0]!.url).to.equal(`${getStack().baseUrl}/a2a`);
    expect(card.securitySchemes.bearer?.scheme?.$case).to.equal('httpAuthSecurityScheme');
    expect(card.skills.map((skill) => skill.id)).to.include.members(['llm', 'search', 'remember']);
    // Public: the card needs no credential.
    const anonymous = await fetch(`${getStack().baseUrl}/.well-known/agent-card.json`);
    expect(anonymous.status).to.equal(200);
  });

  it('sends a message: an llm run with the text as its goal, completed with its answer as an artifact', async () => {
    const { api_key } = await newTenant();
    const client = await a2aClient(api_key);
    const task = asTask(await client.sendMessage(sendRequest(userMessage('check my credit balance'))));
    expect(task.status!.state).to.equal(TaskState.TASK_STATE_COMPLETED);
    const run = (await as(api_key).get(`/v1/runs/${task.id}`)).body;
    expect(run).to.include({ execution_id: task.id, agent: 'llm', status: 'SUCCEEDED' });
    expect(run.input.goal).to.equal('check my credit balance');
    const answer = task.artifacts.find((artifact) => artifact.artifactId === 'answer')!;
    expect(answer.parts[0]!.content).to.deep.equal({ $case: 'text', value: run.output.answer });
    expect(task.artifacts.map((artifact) => artifact.name)).to.include('billing.credits_balance');
    const got = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(got.history[0]!.parts[0]!.content).to.deep.equal({ $case: 'text', value: 'check my credit balance' });
    expect(got.status!.state).to.equal(TaskState.TASK_STATE_COMPLETED);
  });

  it('streams status and artifact updates from the run’s event log, and resumes after an event id', async () => {
    const { api_key } = await newTenant();
    const client = await a2aClient(api_key);
    const items = await collect(client.sendMessageStream(sendRequest(userMessage('check my credit balance'))));
    expect(items[0]!.payload?.$case).to.equal('task');
    const taskId = items[0]!.payload!.$case === 'task' ? items[0]!.payload!.value.id : '';
    const states = statesOf(items);
    expect(states.at(-1)).to.equal('TASK_STATE_COMPLETED');
    expect(states).to.include('TASK_STATE_WORKING');
    const artifacts = items.flatMap((item) =>
      item.payload?.$case === 'artifactUpdate' ? [item.payload.value.artifact!.artifactId] : [],
    );
    expect(artifacts).to.deep.equal(['step-0', 'answer']);
    // The same story as the REST event stream: each update names the run event it came from.
    const ids = items.flatMap((item) =>
      item.payload?.$case === 'statusUpdate' || item.payload?.$case === 'artifactUpdate'
        ? [item.payload.value.metadata!['weft/event_id'] as number]
        : [],
    );
    expect(ids).to.deep.equal([...ids].sort((a, b) => a - b));

    // Resubscribing to a finished task answers it; with Last-Event-ID it replays what came after.
    const again = await collect(client.resubscribeTask({ tenant: '', id: taskId }));
    expect(again.map((item) => item.payload?.$case)).to.deep.equal(['task']);
    const stepEvent = items.find((item) => item.payload?.$case === 'artifactUpdate')!;
    const afterStep = stepEvent.payload?.$case === 'artifactUpdate' ? stepEvent.payload.value.metadata! : {};
    const resumed = await collect(
      client.resubscribeTask(
        { tenant: '', id: taskId },
        { serviceParameters: { 'Last-Event-ID': String(afterStep['weft/event_id']) } },
      ),
    );
    expect(resumed.map((item) => item.payload?.$case)).to.deep.equal(['task', 'artifactUpdate', 'statusUpdate']);
    expect(statesOf(resumed)).to.deep.equal(['TASK_STATE_COMPLETED']);
  });

  it('an approval goes input-required and is answered through A2A by a reviewer, never the dispatcher', async () => {
    const owner = await newTenant();
    const colleague = await newMember(owner.workspace_id);
    const dispatcher = await a2aClient(owner.api_key);
    const task = await gatedTask(dispatcher);
    expect(task.status!.state).to.equal(TaskState.TASK_STATE_INPUT_REQUIRED);
    const asked = task.status!.message!;
    const approvalId = (await as(owner.api_key).get(`/v1/runs/${task.id}`)).body.approvals[0].approval_id;
    expect(JSON.stringify(asked.parts)).to.contain(approvalId);

    // Separation of duties: the credential that dispatched the run may not approve it.
    const own = await refusal(dispatcher.sendMessage(sendRequest(userMessage('approve', { taskId: task.id }))));
    expect(own.code).to.equal(-32000);
    expect(own.message).to.match(/approval_by_dispatcher/);

    const reviewer = await a2aClient(colleague.api_key);
    const answered = asTask(
      await reviewer.sendMessage(sendRequest(userMessage('approve: checked', { taskId: task.id }))),
    );
    expect(answered.status!.state).to.equal(TaskState.TASK_STATE_COMPLETED);
    const run = await finished(as(owner.api_key), task.id);
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.approvals[0]).to.deep.include({ status: 'approved', resolved_by: colleague.user_id });
  });

  it('rejects through a data part, and cancels a task (idempotent; a finished one is not cancelable)', async () => {
    const owner = await newTenant();
    const colleague = await newMember(owner.workspace_id);
    const reviewer = await a2aClient(colleague.api_key);
    const client = await a2aClient(owner.api_key, { polling: true });
    const rejected = await gatedTask(await a2aClient(owner.api_key));
    const answer = userMessage({ decision: 'REJECTED', notes: 'not now' }, { taskId: rejected.id });
    expect(asTask(await reviewer.sendMessage(sendRequest(answer))).status!.state).to.equal(TaskState.TASK_STATE_FAILED);
    expect((await refusal(client.cancelTask({ tenant: '', id: rejected.id, metadata: undefined }))).name).to.equal(
      'TaskNotCancelableError',
    );

    const started = asTask(
      await client.sendMessage(sendRequest(userMessage('what is my balance', { metadata: { approval: 'all' } }))),
    );
    expect(started.status!.state).to.be.oneOf([TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_INPUT_REQUIRED]);
    const cancelled = await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
    expect(cancelled.status!.state).to.equal(TaskState.TASK_STATE_CANCELED);
    const twice = await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
    expect(twice.status!.state).to.equal(TaskState.TASK_STATE_CANCELED);
    expect((await as(owner.api_key).get(`/v1/runs/${started.id}`)).body.status).to.equal('CANCELLED');
  });

  it('sets, gets, lists and deletes push notification configs as the run’s own callbacks', async () => {
    const { api_key } = await newTenant();
    const client = await a2aClient(api_key, { polling: true });
    const task = await gatedTask(client);
    const url = 'https://callbacks.example.test/a2a';
    const created = await client.createTaskPushNotificationConfig({
      tenant: '',
      id: '',
      taskId: task.id,
      url,
      token: '',
      authentication: undefined,
    });
    expect(created).to.include({ taskId: task.id, url, token: '' });
    const got = await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: created.id });
    expect(got).to.include({ id: created.id, url, token: '' });
    const listed = await client.listTaskPushNotificationConfig({
      tenant: '',
      taskId: task.id,
      pageSize: 0,
      pageToken: '',
    });
    expect(listed.configs.map((config) => config.id)).to.deep.equal([created.id]);
    // The run told its new callback it waits for a person, as a dispatch's own callback would be told.
    await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    const deliveries = await eventually(
      async () => {
        const answer = await as(api_key).get(`/v1/runs/${task.id}/callbacks`);
        return answer.body.deliveries.length > 0 && answer.body.deliveries;
      },
      { what: 'a delivery to the push config' },
    );
    expect(deliveries.map((delivery: any) => delivery.event_type)).to.include('run.finished');
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: created.id });
    const gone = await refusal(client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: created.id }));
    expect(gone.name).to.equal('TaskNotFoundError');
  });

  it('refuses another workspace’s task id at every method (attacker), and leaves the run alone', async () => {
    const victim = await newTenant();
    const task = await gatedTask(await a2aClient(victim.api_key));
    const attacker = await a2aClient((await newTenant()).api_key);
    const attempts: (() => Promise<unknown>)[] = [
      () => attacker.getTask({ tenant: '', id: task.id, historyLength: undefined }),
      () => attacker.cancelTask({ tenant: '', id: task.id, metadata: undefined }),
      () => attacker.sendMessage(sendRequest(userMessage('approve', { taskId: task.id }))),
      () => collect(attacker.resubscribeTask({ tenant: '', id: task.id })),
      () =>
        attacker.createTaskPushNotificationConfig({
          tenant: '',
          id: '',
          taskId: task.id,
          url: 'https://attacker.example.test/',
          token: '',
          authentication: undefined,
        }),
      () => attacker.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' }),
    ];
    for (const attempt of attempts) {
      const refused = await refusal(attempt());
      expect(refused.name, refused.message).to.equal('TaskNotFoundError');
      expect(refused.message).not.to.contain('credit');
    }
    const run = (await as(victim.api_key).get(`/v1/runs/${task.id}`)).body;
    expect(run.status).to.equal('AWAITING_APPROVAL');
    expect((await as(victim.api_key).get(`/v1/runs/${task.id}/callbacks`)).body.deliveries).to.have.length(0);
    await as(victim.api_key).post(`/v1/runs/${task.id}/cancel`);
  });

  it('speaks 0.3 to the SDK’s compatibility transport: message/send, message/stream, tasks/get', async () => {
    const { api_key } = await newTenant();
    const card = await (await a2aClient(api_key)).getAgentCard();
    const legacy = card.supportedInterfaces.find((i) => i.protocolVersion === '0.3')!;
    const transport = new LegacyJsonRpcTransport({ endpoint: legacy.url, fetchImpl: bearerFetch(api_key) });
    const sent = asTask(await transport.sendMessage(sendRequest(userMessage('check my credit balance'))));
    expect(sent.status!.state).to.equal(TaskState.TASK_STATE_COMPLETED);
    const items = await collect(transport.sendMessageStream(sendRequest(userMessage('what is my balance'))));
    expect(statesOf(items).at(-1)).to.equal('TASK_STATE_COMPLETED');
    const got = await transport.getTask({ tenant: '', id: sent.id, historyLength: undefined });
    expect(got.artifacts.map((artifact) => artifact.artifactId)).to.include('answer');
  });

  it('answers bad JSON-RPC with JSON-RPC errors, never a 500; no credential is a 401', async () => {
    const { api_key } = await newTenant();
    const post = async (body: string, headers: Record<string, string> = {}) => {
      const response = await fetch(`${getStack().baseUrl}/a2a`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${api_key}`, ...headers },
        body,
      });
      return { status: response.status, body: (await response.json()) as any };
    };
    // The SDK's transport answers a malformed request (a batch, no method, not 2.0) with -32602, as its own server.
    const cases: [string, number][] = [
      ['{not json', -32700],
      ['[]', -32602],
      [JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }]), -32602],
      [JSON.stringify({ jsonrpc: '2.0', id: 1 }), -32602],
      [JSON.stringify({ jsonrpc: '1.0', id: 1, method: 'GetTask', params: { id: 'x' } }), -32602],
      [JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'NoSuchMethod', params: {} }), -32601],
      [JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: [1] }), -32602],
      [JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'not-a-uuid' } }), -32001],
      [JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: {} }), -32602],
      [
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'SendMessage',
          params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [] } },
        }),
        -32602,
      ],
      [
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'SendMessage',
          params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }], metadata: { skill: 'x' } } },
        }),
        -32602,
      ],
    ];
    for (const [body, code] of cases) {
      const answer = await post(body, { 'A2A-Version': '1.0' });
      expect(answer.status, body).to.equal(200);
      expect(answer.body.error?.code, body).to.equal(code);
    }
    const legacy = await post(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: 'x' } }));
    expect(legacy.body.error.code).to.equal(-32001);
    const future = await post(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'GetTask', params: {} }), {
      'A2A-Version': '9.9',
    });
    expect(future.body.error.code).to.equal(-32009);
    const asText = await post('{}', { 'Content-Type': 'text/plain' });
    expect(asText.status).to.equal(415);
    const anonymous = await fetch(`${getStack().baseUrl}/a2a`, { method: 'POST', body: '{}' });
    expect(anonymous.status).to.equal(401);
  });
});
