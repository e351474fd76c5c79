import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import { rememberCorrelationId } from '../src/capabilities/tools/graph-writes';
import { capClient } from './helpers/cap';
import { createNode } from './helpers/graph';
import { as } from './helpers/http';
import { finished } from './helpers/runs';
import { getStack } from './helpers/stack';
import { balanceBesidesEmbeddings, newTenant } from './helpers/tenants';

const NODES = '/v1/ontology/nodes';
const ADA = 'Ada Lovelace works at Analytical Engines Ltd.';
const open: Client[] = [];

/** The SDK's own client over Streamable HTTP, as test/mcp.test.ts connects it. */
async function connect(token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${getStack().baseUrl}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'weft-test', version: '1.0.0' });
  open.push(client);
  await client.connect(transport);
  return client;
}

const call = async (client: Client, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) })) as CallToolResult;

const ledgerOf = (workspaceId: string, kind: string): Promise<{ amount: number }[]> =>
  getStack().ownerDataSource.query(
    `SELECT amount FROM credit_ledger WHERE workspace_id = $1 AND kind = $2 ORDER BY created_at`,
    [workspaceId, kind],
  );

const mcpToken = async (userJwt: string, workspaceId: string): Promise<string> =>
  (await as(userJwt).post(`/v1/workspaces/${workspaceId}/mcp-tokens`, { name: 'agent' })).body.token;

const playbook = (steps: unknown[]) => ({ agent: 'playbook', input: { steps } });

describe('capabilities: the graph as tools (issue 40)', function () {
  this.timeout(60_000);

  afterEach(async () => {
    for (const client of open.splice(0)) await client.close().catch(() => undefined);
  });

  it('ontology.remember runs the update prompt once per key, priced as one, and says what it created', async () => {
    const t = await newTenant(20);
    const cap = capClient(t.api_key);
    const first = await cap('ontology.remember', { text: ADA }, 'remember-1');
    expect(first.status, first.text).to.equal(200);
    expect(first.body.credits_charged).to.equal(5);
    const result = first.body.result;
    expect(result).to.include({ status: 'applied', change_set_id: null });
    expect(result.nodes.map((n: any) => [n.type, n.name, n.created])).to.have.deep.members([
      ['person', 'Ada Lovelace', true],
      ['organization', 'Analytical Engines Ltd', true],
    ]);
    const byName = new Map(result.nodes.map((n: any) => [n.name, n.id]));
    expect(result.edges).to.have.length(1);
    expect(result.edges[0]).to.include({
      type: 'WORKS_AT',
      source_node_id: byName.get('Ada Lovelace'),
      target_node_id: byName.get('Analytical Engines Ltd'),
      created: true,
    });
    const audit = await getStack().ownerDataSource.query(
      `SELECT intent, status FROM prompt_runs WHERE correlation_id = $1`,
      [result.correlation_id],
    );
    expect(audit).to.deep.equal([{ intent: 'update', status: 'ok' }]);

    // The same key replays: nothing runs, nothing is charged again.
    const again = await cap('ontology.remember', { text: ADA }, 'remember-1');
    expect(again.body).to.deep.equal(first.body);
    expect(await ledgerOf(t.workspace_id, 'ontology.prompt.update')).to.deep.equal([{ amount: -5 }]);
    // Another text under the key is the key's misuse.
    expect(
      (await cap('ontology.remember', { text: 'Grace Hopper works at Remington Rand.' }, 'remember-1')).status,
    ).to.equal(409);

    // A new call refers to what the graph holds instead of duplicating it.
    const known = await cap('ontology.remember', { text: ADA });
    expect(known.body.result.nodes.map((n: any) => n.created)).to.deep.equal([false, false]);
    expect((await as(t.api_key).get(`${NODES}?type=person`)).body).to.have.length(1);

    const empty = await cap('ontology.remember', { text: '   ' });
    expect(empty.status).to.equal(422);
    expect(empty.body.detail[0].loc).to.deep.equal(['body', 'text']);
  });

  it('ontology.remember: another text under a key is idempotency_key_reused, even while the key runs', async () => {
    const t = await newTenant(20);
    const cap = capClient(t.api_key);
    const texts = [ADA, 'Grace Hopper works at Remington Rand.'];
    // Sent together: whichever comes second meets the key running or finished, and both are the key's misuse.
    const answers = await Promise.all(texts.map((text) => cap('ontology.remember', { text }, 'remember-twice')));
    expect(answers.map((answer) => answer.status).sort()).to.deep.equal([200, 409]);
    expect(answers.find((answer) => answer.status === 409)!.body.detail).to.deep.equal({
      error: 'idempotency_key_reused',
      message: 'This Idempotency-Key was used with another tool or request body',
    });
    expect(await ledgerOf(t.workspace_id, 'ontology.prompt.update')).to.deep.equal([{ amount: -5 }]);
  });

  it('ontology.remember: a retry after a "not now" failure runs again; others are the key’s answer', async () => {
    const t = await newTenant(20);
    const cap = capClient(t.api_key);
    // An earlier attempt under the key failed after reserving (its charge refunded), as a step's
    // first activity attempt may have: the provider's or the platform's failure stored on its run.
    const failedAttempt = (key: string, failure: Record<string, unknown>) =>
      getStack().ownerDataSource.query(
        `INSERT INTO prompt_runs (workspace_id, correlation_id, prompt_kind, source_hash, intent, status,
           linked_credit_ledger_id, error_code, failure)
         VALUES ($1, $2, 'markdown_text', repeat('0', 64), 'update', 'error',
           (SELECT id FROM credit_ledger WHERE workspace_id = $1 OR tenant_id = $3 LIMIT 1), $4, $5)`,
        [t.workspace_id, rememberCorrelationId(t.workspace_id, key), t.tenant_id, failure.errorClass, failure],
      );
    for (const code of ['unavailable', 'rate_limited']) {
      await failedAttempt(`transient-${code}`, { code, errorClass: 'UnavailableError', detail: 'Try again later' });
      const retried = await cap('ontology.remember', { text: ADA }, `transient-${code}`);
      expect(retried.status, retried.text).to.equal(200);
      expect(retried.body.result.correlation_id).to.equal(
        rememberCorrelationId(t.workspace_id, `transient-${code}`, 1),
      );
      // Once it has succeeded, the key replays its answer.
      expect((await cap('ontology.remember', { text: ADA }, `transient-${code}`)).body).to.deep.equal(retried.body);
    }
    await failedAttempt('final', {
      code: 'upstream_unavailable',
      errorClass: 'UpstreamError',
      detail: { error: 'upstream_unavailable', provider: 'openai', reason: 'invalid_response' },
    });
    const replayed = await cap('ontology.remember', { text: ADA }, 'final');
    expect(replayed.status).to.equal(502);
    expect(replayed.body.detail).to.deep.equal({
      error: 'upstream_unavailable',
      provider: 'openai',
      reason: 'invalid_response',
    });
    expect(await ledgerOf(t.workspace_id, 'ontology.prompt.update')).to.deep.equal([{ amount: -5 }, { amount: -5 }]);
  });

  it('reads a node, finds nodes, walks the neighbourhood and the history as the REST routes answer them', async () => {
    const t = await newTenant(20);
    const cap = capClient(t.api_key);
    const ada = (await cap('ontology.write_node', { type: 'person', name: 'Ada Lovelace', properties: { born: 1815 } }))
      .body.result.node;
    const org = (await cap('ontology.write_node', { type: 'organization', name: 'Analytical Engines Ltd' })).body.result
      .node;
    const [{ at: beforeLink }] = await getStack().ownerDataSource.query(`SELECT clock_timestamp() AS at`);
    const linked = await cap('ontology.link', { source_node_id: ada.id, target_node_id: org.id, type: 'WORKS_AT' });
    expect(linked.body.result).to.include({ status: 'applied', change_set_id: null });
    expect(linked.body.result.edge).to.include({ type: 'WORKS_AT', source_node_id: ada.id, target_node_id: org.id });
    expect(linked.body.credits_charged).to.equal(0);

    const got = await cap('ontology.get_node', { node_id: ada.id });
    expect(got.status, got.text).to.equal(200);
    expect(got.body.result.node).to.deep.equal((await as(t.api_key).get(`${NODES}/${ada.id}`)).body);
    expect(got.body.result.edges.outgoing).to.deep.equal([
      {
        id: linked.body.result.edge.id,
        type: 'WORKS_AT',
        source_node_id: ada.id,
        target_node_id: org.id,
        other: { id: org.id, type: 'organization', name: 'Analytical Engines Ltd' },
      },
    ]);
    expect(got.body.result.edges.incoming).to.deep.equal([]);
    expect(got.body.result.truncated).to.equal(false);
    const then = (await cap('ontology.get_node', { node_id: ada.id, as_of: beforeLink.toISOString() })).body.result;
    expect(then.node.id).to.equal(ada.id);
    expect(then.edges).to.deep.equal({ outgoing: [], incoming: [] });
    expect((await cap('ontology.get_node', { node_id: org.id })).body.result.edges.incoming).to.have.length(1);

    // At most 50 edges each way, oldest first (the loop and 50 spokes: truncated); a loop is outgoing only;
    // an edge to a deleted node is gone.
    const hub = await createNode(t.api_key, 'concept', 'hub');
    const loop = await cap('ontology.link', { source_node_id: hub, target_node_id: hub, type: 'SELF' });
    const spokes: { id: string }[] = await getStack().ownerDataSource.query(
      `INSERT INTO nodes (workspace_id, type, name) SELECT $1, 'concept', 'spoke ' || g FROM generate_series(1, 50) g
       RETURNING id`,
      [t.workspace_id],
    );
    await getStack().ownerDataSource.query(
      `INSERT INTO edges (workspace_id, type, source_node_id, target_node_id, created_at)
       SELECT $1, 'SPOKE', $2, s.id, now() + make_interval(secs => s.n)
       FROM unnest($3::uuid[]) WITH ORDINALITY s(id, n)`,
      [t.workspace_id, hub, spokes.map((spoke) => spoke.id)],
    );
    await cap('ontology.link', { source_node_id: spokes[0]!.id, target_node_id: hub, type: 'BACK' });
    const hubRead = (await cap('ontology.get_node', { node_id: hub })).body.result;
    expect(hubRead.edges.outgoing).to.have.length(50);
    expect(hubRead.edges.outgoing[0]).to.include({ id: loop.body.result.edge.id, target_node_id: hub });
    expect(hubRead.edges.outgoing.slice(1).map((e: any) => e.other.name)).to.deep.equal(
      Array.from({ length: 49 }, (_, i) => `spoke ${i + 1}`),
    );
    expect(hubRead.edges.incoming.map((e: any) => [e.type, e.other.name])).to.deep.equal([['BACK', 'spoke 1']]);
    expect(hubRead.truncated).to.equal(true);
    expect((await as(t.api_key).delete(`${NODES}/${spokes[0]!.id}`)).status).to.equal(200);
    const afterDelete = (await cap('ontology.get_node', { node_id: hub })).body.result;
    expect(afterDelete.edges.outgoing.map((e: any) => e.other.name)).to.not.include('spoke 1');
    expect(afterDelete.edges.incoming).to.deep.equal([]);
    expect(afterDelete.truncated).to.equal(false);

    const found = await cap('ontology.find_nodes', { q: 'lovelace' });
    expect(found.body.result.nodes.map((n: any) => n.id)).to.deep.equal([ada.id]);
    const typed = await cap('ontology.find_nodes', { type: 'organization', limit: 5 });
    expect(typed.body.result.nodes.map((n: any) => n.id)).to.deep.equal([org.id]);
    expect((await cap('ontology.find_nodes', { limit: 51 })).body.detail[0].loc).to.deep.equal(['body', 'limit']);

    const around = await cap('ontology.neighborhood', { node_id: ada.id, hops: 1 });
    const rest = await as(t.api_key).get(`/v1/ontology/graph_neighborhood?node_id=${ada.id}&hops=1`);
    expect(around.body.result).to.deep.equal(rest.body);
    const tooDeep = await cap('ontology.neighborhood', { node_id: ada.id, hops: 4 });
    expect(tooDeep.status).to.equal(422);
    expect(tooDeep.body.detail[0].loc).to.deep.equal(['body', 'hops']);

    // An update merges properties; the history shows both versions, newest first.
    const updated = await cap('ontology.write_node', {
      node_id: ada.id,
      type: 'person',
      name: 'Ada Lovelace',
      properties: { title: 'Countess of Lovelace' },
    });
    expect(updated.body.result.node.properties).to.deep.equal({ born: 1815, title: 'Countess of Lovelace' });
    const history = await cap('ontology.history', { node_id: ada.id });
    expect(history.body.result.versions.map((v: any) => v.operation)).to.deep.equal(['update', 'create']);
    expect(history.body.result.versions[0].actor).to.include({ capability: 'ontology.write_node' });
    expect(history.body.result.versions).to.deep.equal(
      (await as(t.api_key).get(`${NODES}/${ada.id}/history`)).body.versions,
    );

    // Another workspace's ids are 404, whatever the tool.
    const stranger = capClient((await newTenant(5)).api_key);
    for (const [tool, body] of [
      ['ontology.get_node', { node_id: ada.id }],
      ['ontology.neighborhood', { node_id: ada.id }],
      ['ontology.history', { node_id: ada.id }],
      ['ontology.write_node', { node_id: ada.id, type: 'person', name: 'Mallory' }],
      ['ontology.link', { source_node_id: ada.id, target_node_id: org.id, type: 'KNOWS' }],
      ['ontology.forget', { node_id: ada.id }],
    ] as const) {
      expect((await stranger(tool, body)).status, tool).to.equal(404);
    }
    expect((await as(t.api_key).get(`${NODES}/${ada.id}`)).body.name).to.equal('Ada Lovelace');
  });

  it('forgets an edge or a node (a soft delete, its edges with it); a read-only key may not write', async () => {
    const t = await newTenant(5);
    const cap = capClient(t.api_key);
    const ada = await createNode(t.api_key, 'person', 'Ada Lovelace');
    const org = await createNode(t.api_key, 'organization', 'Analytical Engines Ltd');
    const edge = (await cap('ontology.link', { source_node_id: ada, target_node_id: org, type: 'WORKS_AT' })).body
      .result.edge;

    const both = await cap('ontology.forget', { node_id: ada, edge_id: edge.id });
    expect(both.status).to.equal(422);
    expect(both.body.detail[0].loc).to.deep.equal(['body', 'node_id']);

    const forgotEdge = await cap('ontology.forget', { edge_id: edge.id });
    expect(forgotEdge.body.result).to.include({ status: 'applied', node: null });
    expect(forgotEdge.body.result.edge).to.include({ id: edge.id, is_deleted: true });
    expect((await as(t.api_key).get(`/v1/ontology/edges/${edge.id}`)).status).to.equal(404);

    const again = (await cap('ontology.link', { source_node_id: ada, target_node_id: org, type: 'WORKS_AT' })).body
      .result.edge;
    const forgotNode = await cap('ontology.forget', { node_id: ada }, 'forget-ada');
    expect(forgotNode.body.result.node).to.include({ id: ada, is_deleted: true });
    expect((await as(t.api_key).get(`${NODES}/${ada}`)).status).to.equal(404);
    expect((await as(t.api_key).get(`/v1/ontology/edges/${again.id}`)).status).to.equal(404);
    // A retried call replays; a new one finds nothing to forget.
    expect((await cap('ontology.forget', { node_id: ada }, 'forget-ada')).body).to.deep.equal(forgotNode.body);
    expect((await cap('ontology.forget', { node_id: ada })).status).to.equal(404);

    const reader = await as(t.user_jwt).post('/v1/auth/me/api-keys', { name: 'reader', scopes: ['capabilities:read'] });
    const refused = await capClient(reader.body.token)('ontology.write_node', { type: 'person', name: 'Grace Hopper' });
    expect(refused.status).to.equal(403);
    expect((await as(t.api_key).get(`${NODES}?type=person`)).body).to.deep.equal([]);
    expect((await capClient(reader.body.token)('ontology.find_nodes', { q: 'Analytical' })).status).to.equal(200);
  });

  it('ontology.symbol_context answers the route’s context at its price, refunded for an unknown symbol', async () => {
    const t = await newTenant(5);
    const method = await createNode(t.api_key, 'code.method', 'Parser.parse');
    const cap = capClient(t.api_key);
    const context = await cap('ontology.symbol_context', { node_id: method });
    expect(context.status, context.text).to.equal(200);
    expect(context.body.credits_charged).to.equal(1);
    expect(context.body.result.symbol.id).to.equal(method);
    expect(context.body.result).not.to.have.property('credit_receipt');
    const unknown = await cap('ontology.symbol_context', { node_id: '00000000-0000-4000-8000-000000000000' });
    expect(unknown.status).to.equal(404);
    const neither = await cap('ontology.symbol_context', { name: 'Parser.parse' });
    expect(neither.status).to.equal(422);
    expect(neither.body.detail[0].loc).to.deep.equal(['body', 'node_id']);
    expect(await balanceBesidesEmbeddings(t.tenant_id)).to.equal(4);
  });

  it('over MCP: listed with hints, remember then read; agents’ writes stage where the workspace says', async () => {
    const t = await newTenant(20);
    const agent = await mcpToken(t.user_jwt, t.workspace_id);
    const client = await connect(agent);
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    for (const name of ['ontology_get_node', 'ontology_find_nodes', 'ontology_neighborhood', 'ontology_history']) {
      expect(byName.get(name)?.annotations, name).to.include({ readOnlyHint: true });
    }
    expect(byName.get('ontology_symbol_context')!.description).to.contain('Costs 1 credit');
    expect(byName.get('ontology_remember')!.description).to.contain('Costs 5 credits (ontology.prompt.update)');
    expect(byName.get('ontology_forget')!.annotations).to.include({ readOnlyHint: false, destructiveHint: true });
    expect(byName.get('ontology_link')!.annotations).to.include({ readOnlyHint: false, destructiveHint: false });

    const remembered = await call(client, 'ontology_remember', { text: ADA }, { 'weft/idempotencyKey': 'mcp-1' });
    expect(remembered.isError, JSON.stringify(remembered)).to.not.equal(true);
    expect(remembered._meta?.['weft/creditsCharged']).to.equal(5);
    const ada = (remembered.structuredContent as any).nodes.find((n: any) => n.name === 'Ada Lovelace');
    const read = await call(client, 'ontology_get_node', { node_id: ada.id });
    expect((read.structuredContent as any).edges.outgoing.map((e: any) => [e.type, e.other.name])).to.deep.equal([
      ['WORKS_AT', 'Analytical Engines Ltd'],
    ]);
    const bad = await call(client, 'ontology_get_node', { node_id: 'nope' });
    expect(bad.isError).to.equal(true);
    expect((bad._meta!['weft/error'] as any).detail[0].loc).to.deep.equal(['arguments', 'node_id']);

    // With agents' writes staged, each call stages one change-set and writes nothing.
    await as(t.user_jwt).patch('/v1/ontology/config', { staging: { agent_writes: true } });
    const staged = await call(client, 'ontology_write_node', { type: 'person', name: 'Grace Hopper' });
    expect(staged.structuredContent).to.include({ status: 'staged', node: null });
    const changeSet = (
      await as(t.api_key).get(`/v1/ontology/change-sets/${(staged.structuredContent as any).change_set_id}`)
    ).body;
    expect(changeSet.source).to.include({ kind: 'capability', capability: 'ontology.write_node' });
    expect(changeSet.preview.nodes.map((n: any) => [n.type, n.name, n.action])).to.deep.equal([
      ['person', 'Grace Hopper', 'create'],
    ]);
    const org = (remembered.structuredContent as any).nodes.find((n: any) => n.name !== 'Ada Lovelace');
    const stagedLink = await call(client, 'ontology_link', {
      source_node_id: ada.id,
      target_node_id: org.id,
      type: 'FOUNDED',
    });
    expect(stagedLink.structuredContent).to.include({ status: 'staged', edge: null });
    const stagedRemember = await call(client, 'ontology_remember', { text: 'Grace Hopper works at Remington Rand.' });
    expect(stagedRemember.structuredContent).to.include({ status: 'staged' });
    expect((stagedRemember.structuredContent as any).change_set_id).to.be.a('string');
    // A forget stages a deletion: nothing deleted until a person approves it, then the node and its edges go.
    const edgeId = (read.structuredContent as any).edges.outgoing[0].id;
    const forgotEdge = await call(client, 'ontology_forget', { edge_id: edgeId });
    const forgotNode = await call(client, 'ontology_forget', { node_id: ada.id });
    expect(forgotNode.structuredContent).to.include({ status: 'staged', node: null, edge: null });
    expect((await as(t.api_key).get(`${NODES}?type=person`)).body.map((n: any) => n.name)).to.deep.equal([
      'Ada Lovelace',
    ]);
    const deletion = (
      await as(t.api_key).get(`/v1/ontology/change-sets/${(forgotNode.structuredContent as any).change_set_id}`)
    ).body;
    expect(deletion.source).to.include({ kind: 'capability', capability: 'ontology.forget' });
    expect(deletion.preview.deletions).to.deep.equal([
      { kind: 'node', id: ada.id, label: 'The node Ada Lovelace (person)', live: true },
    ]);
    const approved = await as(t.user_jwt).post(`/v1/approvals/${deletion.approval_id}/resolve`, {
      decision: 'APPROVED',
    });
    expect(approved.status, approved.text).to.equal(200);
    expect(approved.body.change_set.status).to.equal('applied');
    expect((await as(t.api_key).get(`${NODES}/${ada.id}`)).status).to.equal(404);
    expect((await as(t.api_key).get(`${NODES}?type=person`)).body).to.deep.equal([]);
    // The edge went with its node: the staged edge deletion now finds nothing to delete, and writes nothing.
    const edgeDeletion = (
      await as(t.api_key).get(`/v1/ontology/change-sets/${(forgotEdge.structuredContent as any).change_set_id}`)
    ).body;
    expect(edgeDeletion.preview.deletions[0]).to.include({
      kind: 'edge',
      label: 'The edge Ada Lovelace WORKS_AT Analytical Engines Ltd',
      live: false,
    });
    const late = await as(t.user_jwt).post(`/v1/approvals/${edgeDeletion.approval_id}/resolve`, {
      decision: 'APPROVED',
    });
    expect(late.body.change_set.status).to.equal('conflicted');
    expect(late.body.change_set.conflicts.map((c: any) => c.kind)).to.deep.equal(['edge_deleted']);
    // A key is not an agent: it writes.
    const direct = await capClient(t.api_key)('ontology.write_node', { type: 'person', name: 'Grace Hopper' });
    expect(direct.body.result.status).to.equal('applied');
  });

  it('as a run’s step: the step key keeps a retried step from writing twice, staged where agents’ are', async () => {
    const t = await newTenant(20);
    const client = as(t.api_key);
    const ada = await createNode(t.api_key, 'person', 'Ada Lovelace');
    const org = await createNode(t.api_key, 'organization', 'Analytical Engines Ltd');
    const dispatched = await client.post(
      '/v1/runs',
      playbook([
        { tool: 'ontology.link', input: { source_node_id: ada, target_node_id: org, type: 'WORKS_AT' } },
        { tool: 'ontology.get_node', input: { node_id: ada } },
        { tool: 'ontology.remember', input: { text: 'Charles Babbage mentored Ada Lovelace.' } },
      ]),
    );
    expect(dispatched.status, dispatched.text).to.equal(202);
    const run = await finished(client, dispatched.body.execution_id);
    expect(run.status, JSON.stringify(run.error)).to.equal('SUCCEEDED');
    expect(run.steps.map((s: any) => [s.tool, s.status, s.credits_charged])).to.deep.equal([
      ['ontology.link', 'SUCCEEDED', 0],
      ['ontology.get_node', 'SUCCEEDED', 0],
      ['ontology.remember', 'SUCCEEDED', 5],
    ]);
    const edgeId = run.steps[0].output.edge.id;
    expect(run.steps[1].output.edges.outgoing.map((e: any) => e.id)).to.deep.equal([edgeId]);
    expect(run.steps[2].output.nodes.map((n: any) => [n.name, n.created])).to.have.deep.members([
      ['Charles Babbage', true],
      ['Ada Lovelace', false],
    ]);
    // The step's write carries the step key: a retry of the step would replay it.
    const keys = await getStack().ownerDataSource.query(
      `SELECT tool FROM capability_idempotency_keys WHERE workspace_id = $1 AND idempotency_key = $2`,
      [t.workspace_id, `${dispatched.body.execution_id}:0`],
    );
    expect(keys).to.deep.equal([{ tool: 'ontology.link' }]);
    const [version] = (await client.get(`/v1/ontology/edges?source_node_id=${ada}`)).body;
    expect(version.id).to.equal(edgeId);

    // With agents' writes staged, a run's step stages too, whatever credential dispatched the run.
    await as(t.user_jwt).patch('/v1/ontology/config', { staging: { agent_writes: true } });
    const stagedRun = await client.post(
      '/v1/runs',
      playbook([{ tool: 'ontology.write_node', input: { type: 'person', name: 'Grace Hopper' } }]),
    );
    const done = await finished(client, stagedRun.body.execution_id);
    expect(done.status, JSON.stringify(done.error)).to.equal('SUCCEEDED');
    expect(done.steps[0].output).to.include({ status: 'staged', node: null });
    expect((await client.get(`${NODES}?type=person`)).body.map((n: any) => n.name)).to.have.members([
      'Ada Lovelace',
      'Charles Babbage',
    ]);
  });
});
