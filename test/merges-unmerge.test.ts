import { expect } from 'chai';
import type { BootstrapResult } from '../src/tenancy/service';
import { as } from './helpers/http';
import { createEdge, createNode, createPerson } from './helpers/merges';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

// Issue 31 part 3: merges that can be undone, over real HTTP, Postgres and Temporal.

const owner = () => getStack().ownerDataSource;

const list = async (t: BootstrapResult, status = 'pending') => {
  const response = await as(t.api_key).get(`/v1/ontology/merges?status=${status}`);
  expect(response.status, response.text).to.equal(200);
  return response.body as any[];
};

const nodeRow = async (id: string) =>
  (await owner().query(`SELECT name, properties, reference_count, is_deleted FROM nodes WHERE id = $1`, [id]))[0];

const liveEdges = async (workspaceId: string) =>
  (
    await owner().query(
      `SELECT id, type, source_node_id, target_node_id FROM edges WHERE workspace_id = $1 AND NOT is_deleted`,
      [workspaceId],
    )
  ).map((e: any) => `${e.type}:${e.source_node_id}>${e.target_node_id}`);

/** Another pass of the resolver over a node, as a repeated or retried pass would run it. */
const rerun = (t: BootstrapResult, nodeId: string, tag: string) =>
  getStack().runtime.services.merges.resolvePerson({
    workspaceId: t.workspace_id,
    nodeId,
    workflowId: `test-${tag}-${nodeId}`,
  });

async function approvedPair(t: BootstrapResult, names: [string, string], email?: string) {
  const survivor = await createPerson(t, names[0], email ? { email } : {});
  const duplicate = await createPerson(t, names[1], email ? { email } : {});
  const [candidate] = await list(t);
  expect(candidate).to.include({ survivor_node_id: survivor.id, duplicate_node_id: duplicate.id });
  const approved = await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/approve`, {});
  expect(approved.status, approved.text).to.equal(200);
  return { survivor, duplicate, candidateId: candidate.id as string };
}

describe('merges that can be undone (issue 31 part 3)', function () {
  this.timeout(90_000);

  it('merge → edit → unmerge: the node, its properties and its edges as before; later edges stay', async () => {
    const t = await newTenant();
    const alan = await createPerson(t, 'Alan Turing', {
      email: 'alan@bletchley.example',
      title: 'Dr',
      aliases: ['A. M. Turing'],
    });
    const park = await createNode(t, 'organization', 'Bletchley Park');
    const enigma = await createNode(t, 'project', 'Enigma');
    const joan = await createPerson(t, 'Joan Clarke');
    const dupProperties = { email: 'ALAN@bletchley.example', title: 'Prof', phone: '123', lab: 'Hut 8' };
    const dup = await createPerson(t, 'alan turing', dupProperties);

    const worksAt = await createEdge(t, 'works_at', alan.id, park.id);
    const dupWorksAt = await createEdge(t, 'works_at', dup.id, park.id); // removed by the merge
    const worksOn = await createEdge(t, 'works_on', dup.id, enigma.id); // re-pointed
    const knows = await createEdge(t, 'knows', joan.id, dup.id); // re-pointed (incoming)
    const between = await createEdge(t, 'same_as', alan.id, dup.id); // removed (would be a self-loop)
    const edgesBefore = await liveEdges(t.workspace_id);
    const dupBefore = await nodeRow(dup.id);

    const [candidate] = await list(t);
    const approved = await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/approve`, { notes: 'same' });
    expect(approved.status, approved.text).to.equal(200);
    expect(approved.body.merge).to.include({ edges_repointed: 2, edges_removed: 2 });
    expect((await as(t.api_key).get(`/v1/ontology/nodes/${dup.id}`)).status).to.equal(404);

    // After the merge: the survivor is edited and gains an edge of its own.
    const edited = await as(t.api_key).patch(`/v1/ontology/nodes/${alan.id}`, {
      properties: { title: 'Sir', phone: '999', office: 'Hut 8' },
    });
    expect(edited.status, edited.text).to.equal(200);
    const manchester = await createNode(t, 'organization', 'University of Manchester');
    const later = await createEdge(t, 'works_at', alan.id, manchester.id);
    const survivorRefs = (await nodeRow(alan.id)).reference_count;

    const response = await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/unmerge`, {
      notes: 'two people after all',
    });
    expect(response.status, response.text).to.equal(200);
    const body = response.body;
    expect(body.candidate).to.include({ id: candidate.id, status: 'unmerged' });
    expect(body.action).to.include({ action: 'unmerged', performed_by: t.user_id, notes: 'two people after all' });
    expect(body.unmerge.restored).to.include({ id: dup.id, name: 'alan turing', is_deleted: false });
    expect(body.unmerge.restored.properties).to.deep.equal(dupProperties);
    expect(body.unmerge.edges_restored).to.have.members([worksOn.id, knows.id]);
    expect(body.unmerge.edges_undeleted).to.have.members([dupWorksAt.id, between.id]);
    expect(body.unmerge.edges_not_restored).to.deep.equal([]);
    expect(body.unmerge.edges_left_on_survivor).to.have.length(1);
    expect(body.unmerge.edges_left_on_survivor[0]).to.include({
      id: later.id,
      type: 'works_at',
      source_node_id: alan.id,
      target_node_id: manchester.id,
    });
    // The merge had given the survivor `phone` (since edited: kept) and `lab` (untouched: taken back).
    expect(body.unmerge.survivor_properties_kept).to.deep.equal(['phone']);

    // The graph as a reader sees it.
    const restored = await as(t.api_key).get(`/v1/ontology/nodes/${dup.id}`);
    expect(restored.status, restored.text).to.equal(200);
    expect(restored.body.properties).to.deep.equal(dupProperties);
    // Each node the unmerge wrote has a version labelled as the unmerge (issue 31).
    const versionsOf = async (id: string) => (await as(t.api_key).get(`/v1/ontology/nodes/${id}/history`)).body;
    expect((await versionsOf(dup.id)).versions[0]).to.deep.include({ operation: 'restore', label: 'unmerge' });
    expect((await versionsOf(alan.id)).versions[0]).to.deep.include({ operation: 'update', label: 'unmerge' });
    const survivor = await nodeRow(alan.id);
    expect(survivor.properties).to.deep.equal({
      email: 'alan@bletchley.example',
      title: 'Sir',
      aliases: ['A. M. Turing'],
      phone: '999',
      office: 'Hut 8',
    });
    expect(survivor.reference_count).to.equal(survivorRefs - dupBefore.reference_count);
    expect((await nodeRow(dup.id)).reference_count).to.equal(dupBefore.reference_count);
    expect(await liveEdges(t.workspace_id)).to.have.members([...edgesBefore, `works_at:${alan.id}>${manchester.id}`]);
    expect(edgesBefore).to.include(`works_at:${alan.id}>${park.id}`);
    expect(worksAt.id).to.be.a('string');
    const degrees = await owner().query(`SELECT out_degree, in_degree FROM nodes WHERE id = $1`, [dup.id]);
    expect(degrees[0]).to.deep.equal({ out_degree: 2, in_degree: 2 });

    // The merge's history shows both actions; the lists follow the status.
    const history = await as(t.api_key).get(`/v1/ontology/merges/${candidate.id}`);
    expect(history.status, history.text).to.equal(200);
    expect(history.body.candidate.status).to.equal('unmerged');
    expect(history.body.actions.map((a: any) => [a.action, a.performed_by])).to.deep.equal([
      ['merged', t.user_id],
      ['unmerged', t.user_id],
    ]);
    expect((await list(t, 'unmerged')).map((c) => c.id)).to.deep.equal([candidate.id]);
    expect(await list(t, 'applied')).to.deep.equal([]);

    // Undone once: a second unmerge, or a late decision, is 409.
    const again = await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/unmerge`, {});
    expect(again.status, again.text).to.equal(409);
    expect(again.body.detail).to.contain('already undone');
    expect((await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/approve`, {})).status).to.equal(409);
    const actions = await owner().query(
      `SELECT action FROM merge_actions WHERE candidate_id = $1 ORDER BY created_at`,
      [candidate.id],
    );
    expect(actions.map((a: any) => a.action)).to.deep.equal(['merged', 'unmerged']);
  });

  it('409 with the reason when the merge cannot be undone, and nothing changes', async () => {
    const t = await newTenant();
    const pending = await createPerson(t, 'Hedy Lamarr');
    await createPerson(t, 'hedy lamarr');
    const [open] = await list(t);
    const notMerged = await as(t.api_key).post(`/v1/ontology/merges/${open.id}/unmerge`, {});
    expect(notMerged.status, notMerged.text).to.equal(409);
    expect(notMerged.body.detail).to.contain('only an applied merge');
    expect(pending.id).to.be.a('string');

    const u = await newTenant();
    const { survivor, duplicate, candidateId } = await approvedPair(u, ['Ada Byron', 'ada byron']);
    // The survivor deleted since the merge: there is nothing to split the duplicate from.
    expect((await as(u.api_key).delete(`/v1/ontology/nodes/${survivor.id}`)).status).to.equal(200);
    const refused = await as(u.api_key).post(`/v1/ontology/merges/${candidateId}/unmerge`, {});
    expect(refused.status, refused.text).to.equal(409);
    expect(refused.body.detail).to.contain('the survivor was deleted since the merge');
    expect((await nodeRow(duplicate.id)).is_deleted).to.equal(true);
    expect((await as(u.api_key).get(`/v1/ontology/merges/${candidateId}`)).body.candidate.status).to.equal('applied');

    // The merged-away node changed since the merge (no route edits a deleted node: written directly,
    // as a later feature's write would).
    const w = await newTenant();
    const touched = await approvedPair(w, ['Emmy Noether', 'emmy noether']);
    await owner().query(`UPDATE nodes SET name = 'E. Noether', updated_at = now() WHERE id = $1`, [
      touched.duplicate.id,
    ]);
    const changed = await as(w.api_key).post(`/v1/ontology/merges/${touched.candidateId}/unmerge`, {});
    expect(changed.status, changed.text).to.equal(409);
    expect(changed.body.detail).to.contain('the merged-away node was changed or deleted again since the merge');
    expect((await nodeRow(touched.duplicate.id)).is_deleted).to.equal(true);

    // A merge applied before merges recorded what they changed.
    const v = await newTenant();
    const old = await approvedPair(v, ['Mary Somerville', 'mary somerville']);
    await owner().query(`UPDATE merge_actions SET details = details - 'undo' WHERE candidate_id = $1`, [
      old.candidateId,
    ]);
    const unrecorded = await as(v.api_key).post(`/v1/ontology/merges/${old.candidateId}/unmerge`, {});
    expect(unrecorded.status, unrecorded.text).to.equal(409);
    expect(unrecorded.body.detail).to.contain('before merges recorded what they changed');
    expect((await nodeRow(old.duplicate.id)).is_deleted).to.equal(true);
  });

  it("another workspace's merge is 404 (GET and unmerge); scopes and malformed ids as for decisions", async () => {
    const mine = await newTenant();
    const theirs = await newTenant();
    const { duplicate, candidateId } = await approvedPair(mine, ['Edsger Dijkstra', 'edsger dijkstra']);

    const foreign = await as(theirs.api_key).post(`/v1/ontology/merges/${candidateId}/unmerge`, {});
    expect(foreign.status, foreign.text).to.equal(404);
    expect(foreign.body).to.have.property('detail');
    expect((await as(theirs.user_jwt).post(`/v1/ontology/merges/${candidateId}/unmerge`, {})).status).to.equal(404);
    expect((await as(theirs.api_key).get(`/v1/ontology/merges/${candidateId}`)).status).to.equal(404);
    expect(await list(theirs, 'applied')).to.deep.equal([]);
    expect((await nodeRow(duplicate.id)).is_deleted).to.equal(true);

    const reader = (await as(mine.api_key).post('/v1/auth/me/api-keys', { name: 'r', scopes: ['ontology:read'] })).body
      .token as string;
    expect((await as(reader).post(`/v1/ontology/merges/${candidateId}/unmerge`, {})).status).to.equal(403);
    expect((await as(reader).get(`/v1/ontology/merges/${candidateId}`)).status).to.equal(200);
    expect((await as(mine.api_key).post('/v1/ontology/merges/not-a-uuid/unmerge', {})).status).to.equal(422);
    expect(
      (await as(mine.api_key).post('/v1/ontology/merges/00000000-0000-4000-8000-000000000000/unmerge', {})).status,
    ).to.equal(404);
    expect((await as(mine.api_key).get('/v1/ontology/merges?status=merged')).status).to.equal(422);

    const [applied] = await list(mine, 'applied');
    expect(applied).to.include({ id: candidateId, status: 'applied' });
    expect(applied.duplicate_node.name).to.equal('edsger dijkstra');
  });

  it('an edge the merge moved and that was deleted since stays deleted, and the answer says why', async () => {
    const t = await newTenant();
    const survivor = await createPerson(t, 'Lise Meitner');
    const duplicate = await createPerson(t, 'lise meitner');
    const berlin = await createNode(t, 'organization', 'KWI Berlin');
    const vienna = await createNode(t, 'city', 'Vienna');
    const worksAt = await createEdge(t, 'works_at', duplicate.id, berlin.id);
    const bornIn = await createEdge(t, 'born_in', duplicate.id, vienna.id);
    const [candidate] = await list(t);
    expect((await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/approve`, {})).status).to.equal(200);
    expect((await as(t.api_key).delete(`/v1/ontology/edges/${bornIn.id}`)).status).to.equal(200);

    const response = await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/unmerge`, {});
    expect(response.status, response.text).to.equal(200);
    expect(response.body.unmerge.edges_restored).to.deep.equal([worksAt.id]);
    expect(response.body.unmerge.edges_not_restored).to.deep.equal([
      { id: bornIn.id, reason: 'the edge was deleted since the merge' },
    ]);
    expect(await liveEdges(t.workspace_id)).to.deep.equal([`works_at:${duplicate.id}>${berlin.id}`]);
    expect(survivor.id).to.not.equal(duplicate.id);
  });

  it('two simultaneous unmerges: exactly one undoes the merge, the other is 409', async () => {
    const t = await newTenant();
    const { duplicate, candidateId } = await approvedPair(t, ['Frances Allen', 'frances allen'], 'fran@ibm.example');
    const answers = await Promise.all([
      as(t.api_key).post(`/v1/ontology/merges/${candidateId}/unmerge`, {}),
      as(t.user_jwt).post(`/v1/ontology/merges/${candidateId}/unmerge`, {}),
    ]);
    expect(answers.map((a) => a.status).sort()).to.deep.equal([200, 409]);
    expect((await nodeRow(duplicate.id)).is_deleted).to.equal(false);
    const actions = await owner().query(
      `SELECT action FROM merge_actions WHERE candidate_id = $1 ORDER BY created_at`,
      [candidateId],
    );
    expect(actions.map((a: any) => a.action)).to.deep.equal(['merged', 'unmerged']);
  });

  it('the resolver does not propose an unmerged pair again until its evidence changes', async () => {
    const t = await newTenant();
    const { survivor, duplicate, candidateId } = await approvedPair(t, ['Grace Hopper', 'grace hopper']);
    const undone = await as(t.api_key).post(`/v1/ontology/merges/${candidateId}/unmerge`, {});
    expect(undone.status, undone.text).to.equal(200);

    // The same evidence (the normalised name only): passes over either node propose nothing.
    expect((await rerun(t, duplicate.id, 'same')).pendingCandidateIds).to.deep.equal([]);
    expect((await rerun(t, survivor.id, 'same')).pendingCandidateIds).to.deep.equal([]);
    expect(await list(t)).to.deep.equal([]);

    // A third namesake is proposed with both, as any new pair is.
    const third = await createPerson(t, 'GRACE HOPPER');
    expect(third.result.pendingCandidateIds).to.have.length(2);

    // Both now share an email: new evidence, so the pair is proposed again, as a new candidate.
    for (const id of [survivor.id, duplicate.id]) {
      const patched = await as(t.api_key).patch(`/v1/ontology/nodes/${id}`, {
        properties: { email: 'grace@navy.example' },
      });
      expect(patched.status, patched.text).to.equal(200);
    }
    const changed = await rerun(t, duplicate.id, 'changed');
    const pairKey = [survivor.id, duplicate.id].sort().join('|');
    const again = (await list(t)).find((c) => [c.survivor_node_id, c.duplicate_node_id].sort().join('|') === pairKey);
    expect(again, 'the pair proposed again').to.not.equal(undefined);
    expect(again).to.include({ status: 'pending', confidence_score: 1 });
    expect(again.id).to.not.equal(candidateId);
    expect(changed.pendingCandidateIds).to.include(again.id);
    expect((await as(t.api_key).get(`/v1/ontology/merges/${candidateId}`)).body.candidate.status).to.equal('unmerged');
  });

  it('an auto-merge can be undone, and is not auto-merged again on the same evidence', async () => {
    const t = await newTenant();
    const patched = await as(t.api_key).patch('/v1/ontology/config', {
      resolver: { auto_merge_enabled: true, merge_confidence_threshold: 0.9 },
    });
    expect(patched.status, patched.text).to.equal(200);
    const barbara = await createPerson(t, 'Barbara Liskov', { email: 'liskov@mit.example' });
    const dup = await createPerson(t, 'B. Liskov', { email: 'LISKOV@mit.example', lab: 'CSAIL' });
    const candidateId = dup.result.autoMergedCandidateId;
    expect(candidateId).to.be.a('string');
    expect((await nodeRow(dup.id)).is_deleted).to.equal(true);

    const [applied] = await list(t, 'applied');
    expect(applied.id).to.equal(candidateId);
    const response = await as(t.user_jwt).post(`/v1/ontology/merges/${candidateId}/unmerge`, {});
    expect(response.status, response.text).to.equal(200);
    expect(response.body.unmerge.restored).to.include({ id: dup.id, is_deleted: false });
    expect((await nodeRow(barbara.id)).properties).to.deep.equal({ email: 'liskov@mit.example' });
    expect((await nodeRow(dup.id)).properties).to.deep.equal({ email: 'LISKOV@mit.example', lab: 'CSAIL' });

    const history = (await as(t.api_key).get(`/v1/ontology/merges/${candidateId}`)).body;
    expect(history.actions.map((a: any) => [a.action, a.performed_by])).to.deep.equal([
      ['merged', null],
      ['unmerged', t.user_id],
    ]);

    // Auto-merge is still on, but the pair's evidence is what it was when undone.
    const pass = await rerun(t, dup.id, 'auto');
    expect(pass.autoMergedCandidateId).to.equal(null);
    expect((await nodeRow(dup.id)).is_deleted).to.equal(false);
    expect(await list(t)).to.deep.equal([]);
  });
});
