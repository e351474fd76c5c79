import type { Task, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import { StreamResponse, TaskState } from '@a2a-js/sdk';
import { expect } from 'chai';
import { a2aClient, asTask, sendRequest, userMessage } from './helpers/a2a';
import type { Received } from './helpers/callback-receiver';
import { useCallbackStack } from './helpers/callback-stack';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { finished } from './helpers/runs';
import { newMember, newTenant } from './helpers/tenants';

// Issue 42, A2A push notifications: a push config set through @a2a-js/sdk's client makes its receiver
// get what an A2A server's push notification sender posts (the SDK's DefaultPushNotificationSender):
// StreamResponses in A2A's JSON with the client's token, through Weft's durable, signed run callbacks.
// This stack allows the loopback receiver (RUN_CALLBACK_ALLOW_PRIVATE).

/** A push the receiver got, read as an A2A receiver would: the SDK's StreamResponse from A2A's JSON. */
function pushed(request: Received): { task?: Task; update?: TaskStatusUpdateEvent } {
  const payload = StreamResponse.fromJSON(JSON.parse(request.body)).payload;
  if (payload?.$case === 'task') return { task: payload.value };
  if (payload?.$case === 'statusUpdate') return { update: payload.value };
  throw new Error(`unexpected push ${request.body}`);
}

const stateOf = (request: Received) => {
  const { task, update } = pushed(request);
  return TaskState[(task ?? update)!.status!.state];
};

describe('A2A push notifications (issue 42)', function () {
  this.timeout(90_000);
  const callbacks = useCallbackStack();

  it('POSTs A2A StreamResponses with the token: input-required at the approval, then the completed task', async () => {
    const owner = await newTenant();
    const colleague = await newMember(owner.workspace_id);
    const baseUrl = callbacks.stack.baseUrl;
    const client = await a2aClient(owner.api_key, { baseUrl, polling: true });
    const message = userMessage('what is my credit balance', { metadata: { approval: 'all' } });
    const task = asTask(
      await client.sendMessage({
        ...sendRequest(message),
        configuration: {
          acceptedOutputModes: [],
          taskPushNotificationConfig: {
            tenant: '',
            id: '',
            taskId: '',
            url: callbacks.receiver.url('/a2a/token'),
            token: 'client-chosen-token',
            authentication: undefined,
          },
          historyLength: undefined,
          returnImmediately: true,
        },
      }),
    );
    const asked = await eventually(() => callbacks.receiver.at('/a2a/token')[0], { what: 'the input-required push' });
    const { update } = pushed(asked);
    expect(update).to.include({ taskId: task.id, contextId: task.id });
    expect(TaskState[update!.status!.state]).to.equal('TASK_STATE_INPUT_REQUIRED');
    const approvalId = (await as(owner.api_key, baseUrl).get(`/v1/runs/${task.id}`)).body.approvals[0].approval_id;
    expect(JSON.stringify(update!.status!.message!.parts)).to.contain(approvalId);
    expect(asked.headers).to.include({
      'x-a2a-notification-token': 'client-chosen-token',
      'content-type': 'application/a2a+json',
    });
    expect(asked.headers['x-service-signature']).to.match(/^t=\d+,v1=[0-9a-f]{64}$/);

    // A second config with an authentication scheme: its receiver gets `Authorization`, not the token header.
    const second = await client.createTaskPushNotificationConfig({
      tenant: '',
      id: '',
      taskId: task.id,
      url: callbacks.receiver.url('/a2a/bearer'),
      token: '',
      authentication: { scheme: 'Bearer', credentials: 'receiver-credential' },
    });
    // The client's secrets are never answered back; the scheme says one is set.
    expect(second).to.deep.include({ token: '', authentication: { scheme: 'Bearer', credentials: '' } });
    const listed = await client.listTaskPushNotificationConfig({
      tenant: '',
      taskId: task.id,
      pageSize: 0,
      pageToken: '',
    });
    expect(listed.configs.map((config) => config.token)).to.deep.equal(['', '']);

    const reviewer = await a2aClient(colleague.api_key, { baseUrl });
    await reviewer.sendMessage(sendRequest(userMessage('approve', { taskId: task.id })));
    const run = await finished(as(owner.api_key, baseUrl), task.id);
    expect(run.status).to.equal('SUCCEEDED');

    const both = await eventually(
      () => callbacks.receiver.at('/a2a/token').length === 2 && callbacks.receiver.at('/a2a/bearer').length === 1,
      { what: 'the completed pushes' },
    );
    expect(both).to.equal(true);
    expect(callbacks.receiver.at('/a2a/token').map(stateOf)).to.deep.equal([
      'TASK_STATE_INPUT_REQUIRED',
      'TASK_STATE_COMPLETED',
    ]);
    const done = pushed(callbacks.receiver.at('/a2a/token')[1]!).task!;
    expect(done.id).to.equal(task.id);
    const answer = done.artifacts.find((artifact) => artifact.artifactId === 'answer')!;
    expect(answer.parts[0]!.content).to.deep.equal({ $case: 'text', value: run.output.answer });
    // As GetTask tells it.
    const got = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(done.status!.state).to.equal(got.status!.state);

    const bearer = callbacks.receiver.at('/a2a/bearer')[0]!;
    expect(stateOf(bearer)).to.equal('TASK_STATE_COMPLETED');
    expect(bearer.headers.authorization).to.equal('Bearer receiver-credential');
    expect(bearer.headers).not.to.have.property('x-a2a-notification-token');

    // The REST view shows each delivery's body as it was sent.
    const deliveries = (await as(owner.api_key, baseUrl).get(`/v1/runs/${task.id}/callbacks`)).body.deliveries;
    const sent = [...callbacks.receiver.at('/a2a/token'), bearer].map((request) => request.body).sort();
    expect(deliveries.map((delivery: { body: string }) => delivery.body).sort()).to.deep.equal(sent);
  });

  it('refuses a push config on another workspace’s task, and nothing reaches the attacker’s receiver', async () => {
    const victim = await newTenant();
    const baseUrl = callbacks.stack.baseUrl;
    const owned = await a2aClient(victim.api_key, { baseUrl, polling: true });
    const task = asTask(
      await owned.sendMessage(sendRequest(userMessage('what is my balance', { metadata: { approval: 'all' } }))),
    );
    const attacker = await a2aClient((await newTenant()).api_key, { baseUrl });
    const refused = await attacker
      .createTaskPushNotificationConfig({
        tenant: '',
        id: '',
        taskId: task.id,
        url: callbacks.receiver.url('/a2a/attacker'),
        token: 'stolen',
        authentication: undefined,
      })
      .then(
        () => null,
        (error: Error) => error.name,
      );
    expect(refused).to.equal('TaskNotFoundError');
    await owned.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    await finished(as(victim.api_key, baseUrl), task.id);
    const own = await eventually(
      async () => (await as(victim.api_key, baseUrl).get(`/v1/runs/${task.id}/callbacks`)).body.deliveries,
      { what: 'the victim’s deliveries' },
    );
    expect(own).to.deep.equal([]);
    expect(callbacks.receiver.at('/a2a/attacker')).to.deep.equal([]);
  });
});
