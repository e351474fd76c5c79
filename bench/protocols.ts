/**
 * `npm run bench -- protocols [--runs 60]`
 *
 * Issue 42: a run started through a protocol door, to its first status update, against the anchor
 * `POST /v1/runs` to the first event of `GET /v1/runs/{id}/events`, measured in the same run, one
 * client, the subjects and the anchor interleaved run by run (the order rotated) so that all see the
 * same load. Goal: each door's p50 ≤ 1.2× the anchor's.
 * - A2A `SendMessage` (`message/send`) with `returnImmediately`: its answer is the task and its first
 *   status (working), through `@a2a-js/sdk`'s client;
 * - A2A `SendStreamingMessage` (`message/stream`) to its first `statusUpdate`.
 * - MCP `tools/call` of `runs_dispatch` as a task to its first status (`bench/protocols-mcp.ts`).
 * Every run is an `llm` run with the goal "check my credit balance" (the local planner: one read).
 */
import type { Message } from '@a2a-js/sdk';
import { Role } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { createApp } from '../src/app/http';
import { ensureSearchAttributes } from '../src/platform/temporal/connection';
import { numberOption, percentile } from './lib/measure';
import { forkWorker } from './lib/run-worker';
import { bootBenchService, serveLocally } from './lib/servers';
import { protocolSubjects } from './protocols-mcp';

/** What a door's subject gets: the API's base URL and a credential of a fresh tenant. */
export interface ProtocolBenchContext {
  baseUrl: string;
  token: string;
  goal: string;
}

/** One door: starts a run and answers when its first status update arrived (the bench times the call). */
export interface ProtocolSubject {
  name: string;
  firstStatus(iteration: number): Promise<void>;
}

const GOAL = 'check my credit balance';

/** The anchor: dispatch over REST, then the run's event stream to its first event. */
async function restFirstEvent(context: ProtocolBenchContext): Promise<void> {
  const headers = { authorization: `Bearer ${context.token}`, 'content-type': 'application/json' };
  const dispatched = await fetch(`${context.baseUrl}/v1/runs`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ agent: 'llm', input: { goal: context.goal } }),
  });
  if (dispatched.status !== 202) throw new Error(`POST /v1/runs answered ${dispatched.status}`);
  const { execution_id } = (await dispatched.json()) as { execution_id: string };
  const abort = new AbortController();
  const stream = await fetch(`${context.baseUrl}/v1/runs/${execution_id}/events`, {
    headers,
    signal: abort.signal,
  });
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of stream.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      if (/^data: /m.test(buffer)) return;
    }
  } finally {
    abort.abort();
  }
  throw new Error('the run event stream ended without an event');
}

const message = (iteration: number): Message => ({
  messageId: `bench-${process.pid}-${Date.now()}-${iteration}`,
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value: GOAL }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

async function a2aClient(context: ProtocolBenchContext): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('Authorization', `Bearer ${context.token}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      clientConfig: { polling: true },
    }),
  );
  return factory.createFromUrl(context.baseUrl);
}

/** The A2A door: send (answers the task with its first status) and stream (to its first status update). */
async function a2aSubjects(context: ProtocolBenchContext): Promise<ProtocolSubject[]> {
  const client = await a2aClient(context);
  const request = (iteration: number) => ({
    tenant: '',
    message: message(iteration),
    configuration: undefined,
    metadata: undefined,
  });
  return [
    {
      name: 'A2A SendMessage → task (first status)',
      async firstStatus(iteration) {
        const answer = await client.sendMessage(request(iteration));
        if (!('status' in answer) || !answer.status) throw new Error('SendMessage answered no task status');
      },
    },
    {
      name: 'A2A SendStreamingMessage → first statusUpdate',
      async firstStatus(iteration) {
        const abort = new AbortController();
        const stream = client.sendMessageStream(request(iteration), { signal: abort.signal });
        for await (const item of stream) {
          if (item.payload?.$case === 'statusUpdate') {
            abort.abort();
            await stream.return();
            return;
          }
        }
        throw new Error('the stream ended without a status update');
      },
    },
  ];
}

const ms = (value: number) => value.toFixed(1);

export async function run(args: string[]): Promise<void> {
  const runs = numberOption(args, 'runs', 60);
  const service = await bootBenchService({
    queue: 'weft-bench-protocols',
    settings: { TEMPORAL_NAMESPACE: 'default' },
  });
  // The bench worker process also serves the runs bench's anchor queue; nothing is sent to it here.
  service.env.BENCH_ANCHOR_TASK_QUEUE = `${service.env.TEMPORAL_TASK_QUEUE}-anchor`;
  await ensureSearchAttributes(service.runtime.temporal);
  const worker = await forkWorker(service.env);
  const { server, url: baseUrl } = await serveLocally(createApp(service.runtime));
  try {
    const tenant = await service.provisioning.bootstrap({ name: 'bench-protocols' });
    const context: ProtocolBenchContext = { baseUrl, token: tenant.api_key, goal: GOAL };
    const anchor: ProtocolSubject = {
      name: 'POST /v1/runs → first SSE event',
      firstStatus: () => restFirstEvent(context),
    };
    const subjects = [...(await a2aSubjects(context)), ...(await protocolSubjects(context))];
    const all = [anchor, ...subjects];
    const samples = new Map<string, number[]>(all.map((subject) => [subject.name, []]));
    // Warm-up: one of each (connections, the card, the first workflow).
    for (const subject of all) await subject.firstStatus(-1);
    for (let i = 0; i < runs; i++) {
      // Rotated each run, so no subject always goes first.
      for (let k = 0; k < all.length; k++) {
        const subject = all[(i + k) % all.length]!;
        const t0 = process.hrtime.bigint();
        await subject.firstStatus(i);
        samples.get(subject.name)!.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    }
    const p = (name: string, at: number) =>
      percentile(
        [...samples.get(name)!].sort((a, b) => a - b),
        at,
      );
    const anchorP50 = p(anchor.name, 50);
    const lines = [
      `Runs: ${runs} per door, one client, interleaved. Goal: p50 ≤ 1.2× the anchor’s.`,
      '',
      '| door | p50 ms | p95 ms | p50 ratio to anchor |',
      '|---|---|---|---|',
      ...all.map(
        (subject) =>
          `| ${subject.name} | ${ms(p(subject.name, 50))} | ${ms(p(subject.name, 95))} | ` +
          `×${(p(subject.name, 50) / anchorP50).toFixed(2)} |`,
      ),
    ];
    console.log(lines.join('\n'));
  } finally {
    server.close();
    await worker.stop();
    await service.stop();
  }
}
