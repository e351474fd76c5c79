import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { sha256Hex } from '../src/platform/auth/tokens';
import { CORRELATION_ID_ATTRIBUTE } from '../src/platform/telemetry/tracing';
import { eventually } from './helpers/eventually';
import type { FakeOpenAI } from './helpers/fake-openai';
import { as, request } from './helpers/http';
import { succeeded } from './helpers/runs';
import { newTenant } from './helpers/tenants';
import type { ReceivedSpan, Receiver } from './helpers/traces';
import { attribute, SERVER_KIND, tracedProcesses } from './helpers/traces';
import type { WeftProcess } from './helpers/weft-process';

/** The names from `span` up to its trace's root, by parent ids; undefined when a parent never arrived. */
function ancestry(spans: ReceivedSpan[], span: ReceivedSpan): ReceivedSpan[] | undefined {
  const byId = new Map(spans.filter((s) => s.traceId === span.traceId).map((s) => [s.spanId, s]));
  const chain = [span];
  for (let at = span; at.parentSpanId; ) {
    const parent = byId.get(at.parentSpanId);
    if (!parent) return undefined;
    chain.push(parent);
    at = parent;
  }
  return chain;
}

/**
 * A database statement whose chain of parents runs, span by span, through an activity, its scheduling
 * in the workflow, the workflow, its start and the HTTP request that carries `correlationId`: the
 * whole of one trace. Answers the chain's names, from the statement up.
 */
function fullChain(spans: ReceivedSpan[], correlationId: string, workflowType: string): string[] | undefined {
  for (const statement of spans.filter((s) => attribute(s, 'db.system') === 'postgresql')) {
    const chain = ancestry(spans, statement);
    if (!chain) continue;
    const names = chain.map((s) => s.name);
    const run = names.findIndex((name) => name.startsWith('RunActivity:'));
    if (run < 0) continue;
    const activity = names[run]!.slice('RunActivity:'.length);
    const expected = [`StartActivity:${activity}`, `RunWorkflow:${workflowType}`, `StartWorkflow:${workflowType}`];
    if (expected.some((name, at) => names[run + 1 + at] !== name)) continue;
    const request = chain.slice(run + 4).find((s) => s.kind === SERVER_KIND);
    if (request && attribute(request, CORRELATION_ID_ATTRIBUTE) === correlationId) return names;
  }
  return undefined;
}

/** Waits for `fullChain`, naming what did arrive when it does not. */
async function waitForChain(spans: ReceivedSpan[], correlationId: string, workflowType: string) {
  try {
    return await eventually(() => fullChain(spans, correlationId, workflowType), {
      what: `a full ${workflowType} trace`,
      timeoutMs: 30_000,
      intervalMs: 250,
    });
  } catch (error) {
    const names = [...new Set(spans.map((s) => s.name))].sort();
    throw new Error(`${(error as Error).message}; span names received: ${names.join(', ')}`);
  }
}

describe('traces: OTLP/HTTP from the API through Temporal to SQL (real processes)', function () {
  this.timeout(180_000);
  const traced = tracedProcesses();
  // Read once the processes are up (before()).
  let receiver: Receiver;
  let fake: FakeOpenAI;
  let api: WeftProcess | undefined;
  before(() => {
    ({ receiver, fake, api } = traced);
  });

  it('a prompt: HTTP request → StartWorkflow → RunWorkflow → activity → its SQL, with the correlation id', async () => {
    fake.scriptChat((schema) => {
      if (schema === 'refined_graph') {
        const nodes = [{ ref: 'a', type: 'person', name: 'Grace Hopper', properties: [] }];
        return { content: JSON.stringify({ nodes, edges: [] }) };
      }
      if (schema === 'grounded_answer') return { content: JSON.stringify({ answer: 'The Navy.', citations: [] }) };
      return undefined;
    });
    const tenant = await newTenant(20);
    const correlationId = randomUUID();
    const response = await as(tenant.api_key, api!.baseUrl).post(
      '/v1/ontology/prompt',
      { prompt: 'Grace Hopper served in the Navy. Where did she serve?', force_intent: 'both' },
      { 'x-correlation-id': correlationId },
    );
    expect(response.status, JSON.stringify(response.body)).to.equal(200);

    const chain = await waitForChain(receiver.spans, correlationId, 'promptWorkflow');
    expect(chain).to.include('RunWorkflow:promptWorkflow');
    // One request, one server span carrying its correlation id.
    const http = receiver.spans.filter((s) => attribute(s, CORRELATION_ID_ATTRIBUTE) === correlationId);
    expect(http).to.have.length(1);
  });

  it('a run with one step: HTTP dispatch → StartWorkflow → RunWorkflow → the step activity → its SQL', async () => {
    const tenant = await newTenant(20);
    const client = as(tenant.api_key, api!.baseUrl);
    const correlationId = randomUUID();
    const dispatched = await client.post(
      '/v1/runs',
      { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance' }] } },
      { 'x-correlation-id': correlationId },
    );
    expect(dispatched.status, JSON.stringify(dispatched.body)).to.equal(202);
    await succeeded(client, dispatched.body.execution_id);

    const chain = await waitForChain(receiver.spans, correlationId, 'runWorkflow');
    expect(chain).to.include('RunWorkflow:runWorkflow');
  });

  it('carries no credential, hash or query string, and ids only where the docs list them (review NL-4)', async () => {
    const tenant = await newTenant(20);
    const tag = `private-${randomUUID().slice(0, 8)}`;
    const traced = async (token: string, method: 'get' | 'post', path: string, body?: unknown) => {
      const correlationId = randomUUID();
      const headers = { 'x-correlation-id': correlationId };
      const response = await request(method === 'get' ? 'GET' : 'POST', path, {
        token,
        body,
        baseUrl: api!.baseUrl,
        headers,
      });
      expect(response.status, JSON.stringify(response.body)).to.be.oneOf([200, 202]);
      return { correlationId, response };
    };
    // A dispatch (its unit of work's BEGIN carries the key's lookup), reads with a query string, by key and by JWT.
    const run = await traced(tenant.api_key, 'post', '/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance' }] },
      tags: [tag],
    });
    await succeeded(as(tenant.api_key, api!.baseUrl), run.response.body.execution_id);
    const reads = [
      await traced(tenant.api_key, 'get', `/v1/runs?tag=${tag}`),
      await traced(tenant.user_jwt, 'get', `/v1/runs?tag=${tag}&limit=5`),
    ];
    await waitForChain(receiver.spans, run.correlationId, 'runWorkflow');
    const servers = await eventually(
      () => {
        const found = reads.map((read) =>
          receiver.spans.find((span) => attribute(span, CORRELATION_ID_ATTRIBUTE) === read.correlationId),
        );
        return found.every(Boolean) ? (found as ReceivedSpan[]) : undefined;
      },
      { what: 'the reads’ server spans', timeoutMs: 30_000, intervalMs: 250 },
    );
    for (const span of servers) {
      expect(attribute(span, 'http.target')).to.equal('/v1/runs');
      expect(attribute(span, 'http.url')).to.not.contain('?');
    }

    const jti = String(decodeJwt(tenant.user_jwt).jti);
    const secrets = {
      'the API key': tenant.api_key,
      'its hash': sha256Hex(tenant.api_key),
      'the user JWT': tenant.user_jwt,
      'its jti': jti,
      'the user id': tenant.user_id,
      'the query text': tag,
    };
    const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
    // The ids a span may carry (docs/operations.md, "Tracing"): the correlation id, and Temporal's workflow,
    // run and activity ids, which name what runs (a workflow id may hold its run's or workspace's id).
    // …and a request's path, which names the ids its URL names (`/v1/runs/<execution id>`), never a query.
    const workflowIds = ['temporalWorkflowId', 'workflowId'];
    const paths = ['http.target', 'http.url'];
    const listed = ['weft.correlation_id', 'run_id', 'runId', 'temporalActivityId', ...workflowIds, ...paths];
    const statements = [];
    for (const span of receiver.spans) {
      for (const { key, value } of span.attributes ?? []) {
        // Whatever the value's type: the workflow sink once exported WorkflowInfo's objects (search attributes).
        const text = value.stringValue ?? JSON.stringify(value);
        for (const [what, secret] of Object.entries(secrets)) {
          expect(text, `${what} in ${span.name}'s ${key}`).to.not.contain(secret);
        }
        if (!workflowIds.includes(key))
          expect(text, `the workspace in ${span.name}'s ${key}`).to.not.contain(tenant.workspace_id);
        if (uuid.test(text)) expect(listed, `an id in ${span.name}'s ${key}: ${text}`).to.include(key);
        if (paths.includes(key)) expect(text, `${span.name}'s ${key}`).to.not.contain('?');
        if (key === 'db.statement' && /^BEGIN/.test(text)) statements.push(text);
      }
    }
    // The BEGIN messages were traced, with their literals as `?`.
    expect(statements.some((text) => text.includes("set_config('app.workspace_id', ?"))).to.equal(true);
  });
});
