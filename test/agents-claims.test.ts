import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { capClient } from './helpers/cap';
import { createEdge, createNode } from './helpers/graph';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { newMember, newTenant } from './helpers/tenants';

type Cap = ReturnType<typeof capClient>;

const session = async (cap: Cap): Promise<string> => (await cap('agent.start_session')).body.result.session_id;

describe('agent claims: agent.claim_work, agent.release_claim, agent.list_active_claims', () => {
  let tenant: Awaited<ReturnType<typeof newTenant>>;
  let cap: Cap;
  // file CONTAINS class CONTAINS method
  let file: string;
  let klass: string;
  let method: string;

  before(async () => {
    tenant = await newTenant();
    cap = capClient(tenant.api_key);
    file = await createNode(tenant.api_key, 'code.file', 'src/a.ts');
    klass = await createNode(tenant.api_key, 'code.class', 'A');
    method = await createNode(tenant.api_key, 'code.method', 'A.run');
    await createEdge(tenant.api_key, file, klass);
    await createEdge(tenant.api_key, klass, method);
  });

  it('claims a live node and re-claims it with a new intent under the same claim_id', async () => {
    const s = await session(cap);
    const claimed = await cap('agent.claim_work', { session_id: s, target_node_id: method, intent: 'rename' });
    expect(claimed.status).to.equal(200);
    expect(claimed.body.result).to.include({
      session_id: s,
      target_node_id: method,
      intent: 'rename',
      status: 'active',
    });

    const again = await cap('agent.claim_work', { session_id: s, target_node_id: method, intent: 'rename and test' });
    expect(again.status).to.equal(200);
    expect(again.body.result.claim_id).to.equal(claimed.body.result.claim_id);
    expect(again.body.result.intent).to.equal('rename and test');
    await cap('agent.release_claim', { claim_id: claimed.body.result.claim_id });
  });

  it('conflicts with another session’s claim on the node, an ancestor or a descendant, naming the holder', async () => {
    const holder = await session(cap);
    const other = await session(cap);
    const held = (await cap('agent.claim_work', { session_id: holder, target_node_id: klass, intent: 'refactor' })).body
      .result;
    const expected = { claim_id: held.claim_id, session_id: holder, user_id: tenant.user_id, target_node_id: klass };

    const cases: [string, string][] = [
      [klass, 'same'],
      [method, 'ancestor'],
      [file, 'descendant'],
    ];
    for (const [target, relation] of cases) {
      const refused = await cap('agent.claim_work', { session_id: other, target_node_id: target, intent: 'x' });
      expect(refused.status, relation).to.equal(409);
      expect(refused.body.detail).to.include({ error: 'claim_conflict', relation, ...expected });
    }
    await cap('agent.release_claim', { claim_id: held.claim_id });
    const free = await cap('agent.claim_work', { session_id: other, target_node_id: file, intent: 'now free' });
    expect(free.status).to.equal(200);
    await cap('agent.release_claim', { claim_id: free.body.result.claim_id });
  });

  it('walks CONTAINS edges at any depth, matching the edge type case-insensitively', async () => {
    const { api_key } = await newTenant();
    const c = capClient(api_key);
    const chain: string[] = [];
    for (let i = 0; i < 8; i++) chain.push(await createNode(api_key, 'code.module', `m${i}`));
    for (let i = 0; i < 7; i++) await createEdge(api_key, chain[i]!, chain[i + 1]!, i % 2 ? 'contains' : 'Contains');
    // Another edge type is no hierarchy.
    const called = await createNode(api_key, 'code.function', 'called');
    await createEdge(api_key, chain[7]!, called, 'CALLS');

    const [a, b] = [await session(c), await session(c)];
    expect((await c('agent.claim_work', { session_id: a, target_node_id: chain[0], intent: 'top' })).status).to.equal(
      200,
    );
    const deep = await c('agent.claim_work', { session_id: b, target_node_id: chain[7], intent: 'leaf' });
    expect(deep.status).to.equal(409);
    expect(deep.body.detail.relation).to.equal('ancestor');
    expect((await c('agent.claim_work', { session_id: b, target_node_id: called, intent: 'x' })).status).to.equal(200);
  });

  it('does not hang on a CONTAINS cycle', async () => {
    const { api_key } = await newTenant();
    const c = capClient(api_key);
    const [x, y, z] = [
      await createNode(api_key, 'code.file', 'x'),
      await createNode(api_key, 'code.file', 'y'),
      await createNode(api_key, 'code.file', 'z'),
    ];
    await createEdge(api_key, x, y);
    await createEdge(api_key, y, z);
    await createEdge(api_key, z, x);
    const lonely = await createNode(api_key, 'code.file', 'lonely');
    await createEdge(api_key, lonely, lonely);
    const [a, b] = [await session(c), await session(c)];
    expect((await c('agent.claim_work', { session_id: a, target_node_id: x, intent: 'x' })).status).to.equal(200);
    expect((await c('agent.claim_work', { session_id: b, target_node_id: z, intent: 'z' })).status).to.equal(409);
    expect((await c('agent.claim_work', { session_id: b, target_node_id: lonely, intent: 'l' })).status).to.equal(200);
  });

  it('refuses a CONTAINS edge that would put one session’s claim under another’s (409 claim_conflict)', async () => {
    // The review's L-3: S1 claims the child C, S2 the parent P, then POST /v1/ontology/edges {CONTAINS P→C}.
    const { api_key, user_id } = await newTenant();
    const c = capClient(api_key);
    const [parent, middle, child] = [
      await createNode(api_key, 'code.file', 'p'),
      await createNode(api_key, 'code.class', 'm'),
      await createNode(api_key, 'code.method', 'c'),
    ];
    await createEdge(api_key, middle, child);
    const [s1, s2] = [await session(c), await session(c)];
    const below = (await c('agent.claim_work', { session_id: s1, target_node_id: child, intent: 'c' })).body.result;
    const above = (await c('agent.claim_work', { session_id: s2, target_node_id: parent, intent: 'p' })).body.result;

    for (const type of ['CONTAINS', 'contains']) {
      const joined = await as(api_key).post('/v1/ontology/edges', {
        type,
        source_node_id: parent,
        target_node_id: middle,
      });
      expect(joined.status, joined.text).to.equal(409);
      expect(joined.body.detail).to.include({
        error: 'claim_conflict',
        claim_id: above.claim_id,
        session_id: s2,
        user_id,
        target_node_id: parent,
        descendant_claim_id: below.claim_id,
        descendant_session_id: s1,
        descendant_target_node_id: child,
      });
    }
    // Nothing was written, and both claims stay as they were.
    const edges = await as(api_key).get(`/v1/ontology/edges?source_node_id=${parent}`);
    expect(edges.body).to.deep.equal([]);
    // Another edge type joins nothing; once the lower claim is released, the CONTAINS edge is made.
    expect(
      (
        await as(api_key).post('/v1/ontology/edges', {
          type: 'MENTIONS',
          source_node_id: parent,
          target_node_id: middle,
        })
      ).status,
    ).to.equal(201);
    await c('agent.release_claim', { claim_id: below.claim_id });
    await createEdge(api_key, parent, middle);
    // One session holding both ends is no conflict.
    const own = await createNode(api_key, 'code.method', 'own');
    expect((await c('agent.claim_work', { session_id: s2, target_node_id: own, intent: 'o' })).status).to.equal(200);
    await createEdge(api_key, child, own);
  });

  it('gives exactly one winner among twenty concurrent claims over a parent, child and grandchild', async () => {
    const { api_key } = await newTenant();
    const c = capClient(api_key);
    const parent = await createNode(api_key, 'code.file', 'p');
    const child = await createNode(api_key, 'code.class', 'c');
    const grandchild = await createNode(api_key, 'code.method', 'g');
    await createEdge(api_key, parent, child);
    await createEdge(api_key, child, grandchild);
    const targets = [parent, child, grandchild];
    const sessions = await Promise.all(Array.from({ length: 20 }, () => session(c)));
    const answers = await Promise.all(
      sessions.map((s, i) => c('agent.claim_work', { session_id: s, target_node_id: targets[i % 3], intent: `w${i}` })),
    );
    expect(answers.filter((a) => a.status === 200)).to.have.length(1);
    expect(answers.filter((a) => a.status === 409)).to.have.length(19);
    const [row] = await getStack().ownerDataSource.query(
      `SELECT count(*)::int AS n FROM agent_claims WHERE target_node_id = ANY($1) AND status = 'active'`,
      [targets],
    );
    expect(row.n).to.equal(1);
  });

  it('keeps one active claim per chain under fifty concurrent claims; unrelated nodes are all claimed', async () => {
    const { api_key } = await newTenant();
    const c = capClient(api_key);
    // Two chains of five: a → … → e, and five loose nodes besides.
    const chain = async (prefix: string) => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push(await createNode(api_key, 'code.module', `${prefix}${i}`));
      for (let i = 1; i < 5; i++) await createEdge(api_key, ids[i - 1]!, ids[i]!);
      return ids;
    };
    const first = await chain('x');
    const second = await chain('y');
    const loose = await Promise.all(Array.from({ length: 5 }, (_, i) => createNode(api_key, 'concept', `loose ${i}`)));
    const sessions = await Promise.all(Array.from({ length: 50 }, () => session(c)));
    // 20 on each chain, one on each loose node, and five more on the loose nodes from other sessions.
    const targets = [
      ...Array.from({ length: 20 }, (_, i) => first[i % 5]!),
      ...Array.from({ length: 20 }, (_, i) => second[i % 5]!),
      ...loose,
      ...loose,
    ];
    const answers = await Promise.all(
      sessions.map((s, i) => c('agent.claim_work', { session_id: s, target_node_id: targets[i], intent: `w${i}` })),
    );
    const won = (ids: string[]) => answers.filter((a, i) => a.status === 200 && ids.includes(targets[i]!)).length;
    expect(won(first)).to.equal(1);
    expect(won(second)).to.equal(1);
    expect(won(loose)).to.equal(5);
    expect(answers.filter((a) => a.status === 409)).to.have.length(43);
    const [row] = await getStack().ownerDataSource.query(
      `SELECT count(*)::int AS n FROM agent_claims WHERE target_node_id = ANY($1) AND status = 'active'`,
      [[...first, ...second, ...loose]],
    );
    expect(row.n).to.equal(7);
  });

  it('refuses a claim for a session that is no longer active (409)', async () => {
    const s = await session(cap);
    await cap('agent.end_session', { session_id: s, outcome: 'succeeded' });
    const refused = await cap('agent.claim_work', { session_id: s, target_node_id: method, intent: 'late' });
    expect(refused.status).to.equal(409);
    expect(refused.body.detail).to.include({ error: 'session_inactive', status: 'ended' });
  });

  it('answers 404 for a target that is not a live node of the workspace', async () => {
    const s = await session(cap);
    const unknown = await cap('agent.claim_work', { session_id: s, target_node_id: randomUUID(), intent: 'x' });
    expect(unknown.status).to.equal(404);
    const doomed = await createNode(tenant.api_key, 'code.file', 'doomed');
    await as(tenant.api_key).delete(`/v1/ontology/nodes/${doomed}`);
    expect((await cap('agent.claim_work', { session_id: s, target_node_id: doomed, intent: 'x' })).status).to.equal(
      404,
    );
  });

  it('abandons a session’s active claims when it ends, and release then reports abandoned', async () => {
    const s = await session(cap);
    const a = await createNode(tenant.api_key, 'code.file', 'abandon-a');
    const b = await createNode(tenant.api_key, 'code.file', 'abandon-b');
    const first = (await cap('agent.claim_work', { session_id: s, target_node_id: a, intent: 'x' })).body.result;
    await cap('agent.claim_work', { session_id: s, target_node_id: b, intent: 'y' });
    const ended = await cap('agent.end_session', { session_id: s, outcome: 'cancelled' });
    expect(ended.body.result.abandoned_claims).to.equal(2);
    const released = await cap('agent.release_claim', { claim_id: first.claim_id });
    expect(released.status).to.equal(200);
    expect(released.body.result).to.deep.equal({ claim_id: first.claim_id, status: 'abandoned' });
    const listed = await cap('agent.list_active_claims', { session_id: s });
    expect(listed.body.result.claims).to.deep.equal([]);
  });

  it('releases only for the user who opened the claim (403), idempotently', async () => {
    const colleague = await newMember(tenant.workspace_id);
    const s = await session(cap);
    const target = await createNode(tenant.api_key, 'code.file', 'owned');
    const claim = (await cap('agent.claim_work', { session_id: s, target_node_id: target, intent: 'mine' })).body
      .result;

    // In a shared workspace another user sees the claim, and cannot release it.
    const seen = await capClient(colleague.api_key)('agent.list_active_claims', { target_node_id: target });
    expect(seen.body.result.claims.map((row: any) => row.claim_id)).to.deep.equal([claim.claim_id]);
    expect(seen.body.result.claims[0].user_id).to.equal(tenant.user_id);
    const refused = await capClient(colleague.api_key)('agent.release_claim', { claim_id: claim.claim_id });
    expect(refused.status).to.equal(403);

    const released = await cap('agent.release_claim', { claim_id: claim.claim_id });
    expect(released.body.result).to.deep.equal({ claim_id: claim.claim_id, status: 'released' });
    const again = await cap('agent.release_claim', { claim_id: claim.claim_id });
    expect(again.status).to.equal(200);
    expect(again.body.result.status).to.equal('released');
  });

  it('lists active claims by session and by target', async () => {
    const { api_key } = await newTenant();
    const c = capClient(api_key);
    const [s1, s2] = [await session(c), await session(c)];
    const [n1, n2, n3] = [
      await createNode(api_key, 'code.file', '1'),
      await createNode(api_key, 'code.file', '2'),
      await createNode(api_key, 'code.file', '3'),
    ];
    await c('agent.claim_work', { session_id: s1, target_node_id: n1, intent: 'a' });
    await c('agent.claim_work', { session_id: s1, target_node_id: n2, intent: 'b' });
    const third = (await c('agent.claim_work', { session_id: s2, target_node_id: n3, intent: 'c' })).body.result;
    await c('agent.release_claim', { claim_id: third.claim_id });

    const bySession = (await c('agent.list_active_claims', { session_id: s1 })).body.result;
    expect(bySession.claims.map((row: any) => row.target_node_id)).to.have.members([n1, n2]);
    expect(bySession.truncated).to.equal(false);
    const byTarget = (await c('agent.list_active_claims', { target_node_id: n1 })).body.result;
    expect(byTarget.claims).to.have.length(1);
    expect(byTarget.claims[0]).to.include({ session_id: s1, target_node_id: n1, intent: 'a', status: 'active' });
    expect((await c('agent.list_active_claims', { session_id: s2 })).body.result.claims).to.deep.equal([]);
  });

  it('caps an unscoped list at 200 rows, newest first', async () => {
    const { api_key, workspace_id, user_id } = await newTenant();
    const c = capClient(api_key);
    const s = await session(c);
    const owner = getStack().ownerDataSource;
    const nodes: { id: string }[] = await owner.query(
      `INSERT INTO nodes (workspace_id, type, name)
       SELECT $1, 'code.file', 'f' || i FROM generate_series(1, 205) i RETURNING id`,
      [workspace_id],
    );
    await owner.query(
      `INSERT INTO agent_claims (workspace_id, session_id, user_id, target_node_id, intent, created_at)
       SELECT $1, $2, $3, n.id, 'bulk', now() - make_interval(secs => n.ord)
       FROM unnest($4::uuid[]) WITH ORDINALITY AS n(id, ord)`,
      [workspace_id, s, user_id, nodes.map((n) => n.id)],
    );
    const listed = (await c('agent.list_active_claims', {})).body.result;
    expect(listed.claims).to.have.length(200);
    expect(listed.truncated).to.equal(true);
    expect(listed.claims[0].target_node_id).to.equal(nodes[0]!.id);
    const times = listed.claims.map((row: any) => row.created_at);
    expect([...times].sort().reverse()).to.deep.equal(times);
    // Scoped to the session, the same 205 come back whole.
    const scoped = (await c('agent.list_active_claims', { session_id: s })).body.result;
    expect(scoped.claims).to.have.length(205);
  });

  it('answers 404 for every id of another workspace (an attacker’s view)', async () => {
    const attacker = await newTenant();
    const evil = capClient(attacker.api_key);
    const victimSession = await session(cap);
    const target = await createNode(tenant.api_key, 'code.file', 'victim target');
    const claim = (await cap('agent.claim_work', { session_id: victimSession, target_node_id: target, intent: 'v' }))
      .body.result;
    const own = await session(evil);

    const probes: [string, object][] = [
      ['agent.claim_work', { session_id: own, target_node_id: target, intent: 'steal' }],
      ['agent.claim_work', { session_id: victimSession, target_node_id: target, intent: 'steal' }],
      ['agent.release_claim', { claim_id: claim.claim_id }],
      ['agent.list_active_claims', { session_id: victimSession }],
      ['agent.list_active_claims', { target_node_id: target }],
    ];
    for (const [tool, body] of probes) {
      const answer = await evil(tool, body);
      expect(answer.status, `${tool} ${JSON.stringify(body)}`).to.equal(404);
    }
    expect((await evil('agent.list_active_claims', {})).body.result.claims).to.deep.equal([]);
    const stillHeld = await cap('agent.list_active_claims', { target_node_id: target });
    expect(stillHeld.body.result.claims.map((row: any) => row.claim_id)).to.deep.equal([claim.claim_id]);
  });
});
