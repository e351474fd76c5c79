import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WorkflowNotFoundError } from '@temporalio/client';
import { expect } from 'chai';
import { createApp } from '../src/app/http';
import { createMergeService } from '../src/merges/service';
import { mergeCandidateWorkflow, mergeStatusQuery } from '../src/merges/workflow';
import { WORKSPACE_ID_ATTRIBUTE } from '../src/platform/temporal/search-attributes';
import { WorkflowStarter } from '../src/platform/temporal/starter';
import type { BootstrapResult } from '../src/tenancy/service';
import { eventually, sleep } from './helpers/eventually';
import { as, request } from './helpers/http';
import { createEdge, createNode, createPerson } from './helpers/merges';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

const temporal = () => getStack().runtime.temporal.client;
const owner = () => getStack().ownerDataSource;

const pending = async (t: BootstrapResult) => {
  const response = await as(t.api_key).get('/v1/ontology/merges');
  expect(response.status, response.text).to.equal(200);
  return response.body as any[];
};

const pairOf = (candidate: { survivor_node_id: string; duplicate_node_id: string }) =>
  [candidate.survivor_node_id, candidate.duplicate_node_id].sort().join('|');

const nodeRow = async (id: string) =>
  (await owner().query(`SELECT name, properties, reference_count, is_deleted FROM nodes WHERE id = $1`, [id]))[0];

async function workflowStatus(workflowId: string) {
  const description = await temporal().workflow.getHandle(workflowId).describe();
  return { status: description.status.name, workspace: description.typedSearchAttributes.get(WORKSPACE_ID_ATTRIBUTE) };
}

/**
 * Two namesakes and their pending candidate, inserted as a fixture with no review workflow (the
 * resolver is switched off), so that a test can start the review with its own check interval.
 */
async function unreviewedCandidate(t: BootstrapResult) {
  const patched = await as(t.api_key).patch('/v1/ontology/config', { resolver: { person_resolver_enabled: false } });
  expect(patched.status, patched.text).to.equal(200);
  const survivor = await createNode(t, 'person', 'Ada Byron');
  const duplicate = await createNode(t, 'person', 'ada byron');
  const [row] = await owner().query(
    `INSERT INTO merge_candidates (workspace_id, survivor_node_id, duplicate_node_id, match_reasons, confidence_score)
     VALUES ($1, $2, $3, ARRAY['normalized_name_match'], 0.75) RETURNING id`,
    [t.workspace_id, survivor.id, duplicate.id],
  );
  return { id: row.id as string, survivor, duplicate };
}

/** Starts the candidate's review as the resolver would, but waking up every `interval`. */
const startReview = (t: BootstrapResult, candidateId: string, interval = '1 second') =>
  getStack().runtime.temporal.workflows.start(mergeCandidateWorkflow, {
    workspaceId: t.workspace_id,
    candidateId,
    reviewCheckInterval: interval,
  });

const candidateRow = async (id: string) =>
  (await owner().query(`SELECT status FROM merge_candidates WHERE id = $1`, [id]))[0]?.status as string | undefined;

describe('person resolution and the merge queue', function () {
  this.timeout(60_000);

  describe('scores (contract 2.4)', () => {
    it('email and normalised name both match → 1.00, and without auto-merge the pair waits for review', async () => {
      const t = await newTenant();
      const ada = await createPerson(t, 'Ada Lovelace', { email: 'ada@example.com' });
      expect(ada.result.pendingCandidateIds).to.deep.equal([]);
      const twin = await createPerson(t, '  ADA   lovelace ', { email: ' Ada@Example.com ' });
      expect(twin.result).to.include({ status: 'resolved', autoMergedCandidateId: null });

      const [candidate, ...rest] = await pending(t);
      expect(rest).to.deep.equal([]);
      expect(candidate).to.include({
        status: 'pending',
        confidence_score: 1,
        survivor_node_id: ada.id,
        duplicate_node_id: twin.id,
      });
      expect(candidate.match_reasons).to.deep.equal(['email_match', 'normalized_name_match']);
      expect(candidate.created_at).to.be.a('string');
      expect(candidate.survivor_node.name).to.equal('Ada Lovelace');
      expect((await nodeRow(twin.id)).is_deleted).to.equal(false);
    });

    it('email only → 0.95 (a contact may match a person)', async () => {
      const t = await newTenant();
      const grace = await createPerson(t, 'Grace Hopper', { email: 'grace@navy.mil' });
      const other = await createPerson(t, 'Rear Admiral G. M. Hopper', { email: 'GRACE@navy.mil' }, 'contact');
      const [candidate] = await pending(t);
      expect(candidate).to.include({ confidence_score: 0.95, survivor_node_id: grace.id, duplicate_node_id: other.id });
      expect(candidate.match_reasons).to.deep.equal(['email_match']);
    });

    it('normalised name only → 0.75 (accents and punctuation folded)', async () => {
      const t = await newTenant();
      const first = await createPerson(t, 'José Núñez-García', { email: 'jose@a.example' });
      const second = await createPerson(t, 'jose nunez garcia', { email: 'jn@b.example' });
      const [candidate] = await pending(t);
      expect(candidate).to.include({
        confidence_score: 0.75,
        survivor_node_id: first.id,
        duplicate_node_id: second.id,
      });
      expect(candidate.match_reasons).to.deep.equal(['normalized_name_match']);
    });

    it('proposes nothing for non-person types, other names, or deleted people', async () => {
      const t = await newTenant();
      await createPerson(t, 'Alan Kay', { email: 'alan@parc.example' });
      // Not a person: the resolver does not even start.
      const org = await createNode(t, 'organization', 'Alan Kay', { email: 'alan@parc.example' });
      const unrelated = await createPerson(t, 'Butler Lampson', { email: 'butler@parc.example' });
      expect(unrelated.result.pendingCandidateIds).to.deep.equal([]);
      const gone = await createPerson(t, 'Chuck Thacker');
      expect((await as(t.api_key).delete(`/v1/ontology/nodes/${gone.id}`)).status).to.equal(200);
      const later = await createPerson(t, 'Chuck Thacker');
      expect(later.result.pendingCandidateIds).to.deep.equal([]);
      expect(await pending(t)).to.deep.equal([]);
      await sleep(300);
      try {
        await temporal().workflow.getHandle(`resolve-${org.id}`).describe();
        expect.fail('an organization must not start the person resolver');
      } catch (error) {
        expect(error).to.be.instanceOf(WorkflowNotFoundError);
      }
    });

    it('honours person_resolver_enabled = false', async () => {
      const t = await newTenant();
      expect(
        (await as(t.api_key).patch('/v1/ontology/config', { resolver: { person_resolver_enabled: false } })).status,
      ).to.equal(200);
      await createPerson(t, 'Linus Torvalds', { email: 'linus@example.org' });
      const again = await createPerson(t, 'Linus Torvalds', { email: 'linus@example.org' });
      expect(again.result.status).to.equal('disabled');
      expect(await pending(t)).to.deep.equal([]);
    });
  });

  it('lists pending candidates newest first, with both node ids and created_at', async () => {
    const t = await newTenant();
    const a = await createPerson(t, 'Sam Carter');
    const b = await createPerson(t, 'Sam Carter');
    await sleep(20);
    const c = await createPerson(t, 'sam  carter');
    const list = await pending(t);
    expect(list).to.have.length(3);
    expect(list.map(pairOf)).to.have.members(
      [
        [a.id, b.id],
        [a.id, c.id],
        [b.id, c.id],
      ].map((p) => p.sort().join('|')),
    );
    expect(pairOf(list[2])).to.equal([a.id, b.id].sort().join('|'));
    const times = list.map((item) => Date.parse(item.created_at));
    expect(times).to.deep.equal([...times].sort((x, y) => y - x));
    for (const item of list) {
      expect(item).to.include.all.keys(
        'id',
        'status',
        'match_reasons',
        'confidence_score',
        'survivor_node_id',
        'duplicate_node_id',
        'created_at',
      );
    }
  });

  describe('approve', () => {
    it('one merge: edges re-pointed (deduped), properties merged, counts summed, duplicate soft-deleted', async () => {
      const t = await newTenant();
      const alan = await createPerson(t, 'Alan Turing', {
        email: 'alan@bletchley.example',
        title: 'Dr',
        aliases: ['A. M. Turing'],
      });
      const park = await createNode(t, 'organization', 'Bletchley Park');
      const enigma = await createNode(t, 'project', 'Enigma');
      const joan = await createPerson(t, 'Joan Clarke');
      const dup = await createPerson(t, 'alan turing', {
        email: 'ALAN@bletchley.example',
        title: 'Prof',
        phone: '123',
      });

      await createEdge(t, 'works_at', alan.id, park.id);
      const dupWorksAt = await createEdge(t, 'works_at', dup.id, park.id); // same as alan's: removed
      const worksOn = await createEdge(t, 'works_on', dup.id, enigma.id); // re-pointed
      const knows = await createEdge(t, 'knows', joan.id, dup.id); // re-pointed (incoming)
      const between = await createEdge(t, 'same_as', alan.id, dup.id); // would be a self-loop: removed

      const [candidate] = await pending(t);
      expect(candidate).to.include({ survivor_node_id: alan.id, duplicate_node_id: dup.id });
      expect(await workflowStatus(`merge-${candidate.id}`)).to.deep.equal({
        status: 'RUNNING',
        workspace: t.workspace_id,
      });
      const before = { alan: (await nodeRow(alan.id)).reference_count, dup: (await nodeRow(dup.id)).reference_count };
      expect(before.dup).to.be.greaterThan(0);

      const response = await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/approve`, {
        notes: 'same person',
      });
      expect(response.status, response.text).to.equal(200);
      expect(response.body.candidate).to.include({ id: candidate.id, status: 'applied' });
      expect(response.body.candidate.resolved_at).to.be.a('string');
      expect(response.body.action).to.include({ action: 'merged', performed_by: t.user_id, notes: 'same person' });
      expect(response.body.merge).to.include({ duplicate_node_id: dup.id, edges_repointed: 2, edges_removed: 2 });
      expect(response.body.merge.survivor.id).to.equal(alan.id);

      const survivor = await nodeRow(alan.id);
      expect(survivor.is_deleted).to.equal(false);
      expect(survivor.reference_count).to.equal(before.alan + before.dup);
      expect(survivor.properties).to.deep.equal({
        email: 'alan@bletchley.example',
        title: 'Dr',
        phone: '123',
        aliases: ['A. M. Turing', 'alan turing'],
      });
      expect((await nodeRow(dup.id)).is_deleted).to.equal(true);
      expect((await as(t.api_key).get(`/v1/ontology/nodes/${dup.id}`)).status).to.equal(404);

      const live = await owner().query(
        `SELECT id, type, source_node_id, target_node_id FROM edges WHERE workspace_id = $1 AND NOT is_deleted
         ORDER BY type`,
        [t.workspace_id],
      );
      expect(live.map((e: any) => [e.type, e.source_node_id, e.target_node_id])).to.deep.equal([
        ['knows', joan.id, alan.id],
        ['works_at', alan.id, park.id],
        ['works_on', alan.id, enigma.id],
      ]);
      expect(live.map((e: any) => e.id)).to.include.members([worksOn.id, knows.id]);
      const removed = await owner().query(`SELECT id FROM edges WHERE id = ANY($1) AND is_deleted`, [
        [dupWorksAt.id, between.id],
      ]);
      expect(removed).to.have.length(2);

      const [action] = await owner().query(
        `SELECT action, performed_by, notes FROM merge_actions WHERE candidate_id = $1`,
        [candidate.id],
      );
      expect(action).to.deep.equal({ action: 'merged', performed_by: t.user_id, notes: 'same person' });
      expect(await pending(t)).to.deep.equal([]);
      await eventually(
        async () => ((await workflowStatus(`merge-${candidate.id}`)).status === 'COMPLETED' ? true : undefined),
        { what: 'the review workflow to end' },
      );

      // Already resolved: 409 for either decision.
      expect((await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/approve`, {})).status).to.equal(409);
      expect(
        (await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/reject`, { notes: 'late' })).status,
      ).to.equal(409);
    });

    it('supersedes the other candidates of the merged-away node and closes their reviews', async () => {
      const t = await newTenant();
      const a = await createPerson(t, 'Katherine Johnson');
      const b = await createPerson(t, 'Katherine Johnson');
      const c = await createPerson(t, 'Katherine  Johnson');
      const list = await pending(t);
      const bc = list.find((item) => pairOf(item) === [b.id, c.id].sort().join('|'));
      const ac = list.find((item) => pairOf(item) === [a.id, c.id].sort().join('|'));
      const ab = list.find((item) => pairOf(item) === [a.id, b.id].sort().join('|'));

      const response = await as(t.api_key).post(`/v1/ontology/merges/${bc.id}/approve`, {});
      expect(response.status, response.text).to.equal(200);
      expect(response.body.action.notes).to.equal(null);
      expect(response.body.merge.superseded_candidate_ids).to.deep.equal([ac.id]);
      expect((await pending(t)).map((item) => item.id)).to.deep.equal([ab.id]);
      expect((await as(t.api_key).post(`/v1/ontology/merges/${ac.id}/approve`, {})).status).to.equal(409);
      await eventually(
        async () => ((await workflowStatus(`merge-${ac.id}`)).status === 'COMPLETED' ? true : undefined),
        { what: 'the superseded review to close' },
      );
    });
  });

  describe('concurrent decisions and scopes', () => {
    it('takes exactly one of two simultaneous decisions; the other gets 409', async () => {
      const t = await newTenant();
      await createPerson(t, 'Frances Allen', { email: 'fran@ibm.example' });
      await createPerson(t, 'Frances E. Allen', { email: 'fran@ibm.example' });
      const [candidate] = await pending(t);
      const [approve, reject] = await Promise.all([
        as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/approve`, {}),
        as(t.user_jwt).post(`/v1/ontology/merges/${candidate.id}/reject`, {}),
      ]);
      expect([approve.status, reject.status].sort()).to.deep.equal([200, 409]);
      const actions = await owner().query(`SELECT action FROM merge_actions WHERE candidate_id = $1`, [candidate.id]);
      expect(actions).to.have.length(1);
      expect(actions[0].action).to.equal(approve.status === 200 ? 'merged' : 'rejected');
    });

    it('reading needs ontology:read and deciding needs ontology:write (403)', async () => {
      const t = await newTenant();
      await createPerson(t, 'Radia Perlman');
      await createPerson(t, 'radia perlman');
      const created = await as(t.api_key).post('/v1/auth/me/api-keys', { name: 'reader', scopes: ['ontology:read'] });
      expect(created.status, created.text).to.equal(201);
      const reader = created.body.token as string;
      const [candidate] = await pending({ ...t, api_key: reader });
      expect((await as(reader).post(`/v1/ontology/merges/${candidate.id}/approve`, {})).status).to.equal(403);
      const writerOnly = (
        await as(t.api_key).post('/v1/auth/me/api-keys', { name: 'writer', scopes: ['ontology:write'] })
      ).body.token;
      expect((await as(writerOnly).get('/v1/ontology/merges')).status).to.equal(403);
      expect((await pending(t)).map((item) => item.id)).to.deep.equal([candidate.id]);
    });
  });

  describe('reject', () => {
    it('records the action, and later resolver runs never propose the pair again', async () => {
      const t = await newTenant();
      const first = await createPerson(t, 'Margaret Hamilton', { email: 'mh@mit.example' });
      const second = await createPerson(t, 'Margaret Hamilton', { email: 'margaret@actor.example' });
      const [candidate] = await pending(t);

      const response = await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/reject`, {
        notes: 'the actress, not the engineer',
      });
      expect(response.status, response.text).to.equal(200);
      expect(response.body.candidate.status).to.equal('rejected');
      expect(response.body.action).to.include({
        action: 'rejected',
        performed_by: t.user_id,
        notes: 'the actress, not the engineer',
      });
      expect(response.body.merge).to.equal(null);
      expect((await nodeRow(first.id)).is_deleted).to.equal(false);
      expect((await nodeRow(second.id)).is_deleted).to.equal(false);
      expect(await pending(t)).to.deep.equal([]);

      // Another pass over the same node (as a retried or repeated resolver would run it)...
      const rerun = await getStack().runtime.services.merges.resolvePerson({
        workspaceId: t.workspace_id,
        nodeId: second.id,
        workflowId: `test-rerun-${second.id}`,
      });
      expect(rerun.pendingCandidateIds).to.deep.equal([]);
      // ...and a third namesake: both new pairs are proposed, the rejected one is not.
      const third = await createPerson(t, 'margaret hamilton');
      const list = await pending(t);
      expect(list.map(pairOf)).to.have.members(
        [
          [first.id, third.id],
          [second.id, third.id],
        ].map((p) => p.sort().join('|')),
      );
      const rows = await owner().query(`SELECT status FROM merge_candidates WHERE id = $1`, [candidate.id]);
      expect(rows).to.deep.equal([{ status: 'rejected' }]);
      expect((await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/reject`, {})).status).to.equal(409);
    });
  });

  describe('auto-merge', () => {
    it('merges at once when enabled and the score reaches the threshold, with performed_by null', async () => {
      const t = await newTenant();
      const patched = await as(t.api_key).patch('/v1/ontology/config', {
        resolver: { auto_merge_enabled: true, merge_confidence_threshold: 0.9 },
      });
      expect(patched.status).to.equal(200);
      const barbara = await createPerson(t, 'Barbara Liskov', { email: 'liskov@mit.example' });
      const dup = await createPerson(t, 'B. Liskov', { email: 'LISKOV@mit.example', lab: 'CSAIL' });
      expect(dup.result.autoMergedCandidateId).to.be.a('string');
      expect(dup.result.pendingCandidateIds).to.deep.equal([]);

      expect((await nodeRow(dup.id)).is_deleted).to.equal(true);
      const survivor = await nodeRow(barbara.id);
      expect(survivor.properties).to.deep.equal({ email: 'liskov@mit.example', lab: 'CSAIL', aliases: ['B. Liskov'] });
      const [row] = await owner().query(
        `SELECT c.status, c.confidence_score::float8 AS score, a.action, a.performed_by
         FROM merge_candidates c JOIN merge_actions a ON a.candidate_id = c.id WHERE c.id = $1`,
        [dup.result.autoMergedCandidateId],
      );
      expect(row).to.deep.equal({ status: 'applied', score: 0.95, action: 'merged', performed_by: null });
      expect(await pending(t)).to.deep.equal([]);

      // A name-only match scores 0.75, below the threshold: it waits for a reviewer.
      const namesake = await createPerson(t, 'Barbara Liskov', { email: 'other@example.org' });
      const [candidate, ...rest] = await pending(t);
      expect(rest).to.deep.equal([]);
      expect(candidate).to.include({
        confidence_score: 0.75,
        survivor_node_id: barbara.id,
        duplicate_node_id: namesake.id,
      });
      expect((await nodeRow(namesake.id)).is_deleted).to.equal(false);
    });
  });

  describe('node.created delivery', () => {
    it('is idempotent: redelivery starts no second resolver, candidate or charge', async () => {
      const t = await newTenant();
      await createPerson(t, 'Donald Knuth', { email: 'knuth@cs.example' });
      const dup = await createPerson(t, 'Donald E. Knuth', { email: 'knuth@cs.example' });
      const [candidate] = await pending(t);
      const resolver = temporal().workflow.getHandle(`resolve-${dup.id}`);
      const firstRun = (await resolver.describe()).runId;
      expect(await workflowStatus(`resolve-${dup.id}`)).to.deep.equal({
        status: 'COMPLETED',
        workspace: t.workspace_id,
      });

      // Redeliver the committed event twice, through the relay as a crash-and-retry would.
      const { runtime } = getStack();
      for (let i = 0; i < 2; i++) {
        await owner().query(
          `UPDATE outbox SET dispatched_at = NULL WHERE workspace_id = $1 AND event_type = 'node.created'
           AND aggregate_id = $2`,
          [t.workspace_id, dup.id],
        );
        expect(await runtime.outbox.dispatchWorkspace(t.workspace_id)).to.equal(1);
      }
      const [event] = await owner().query(
        `SELECT dispatched_at, attempts, last_error FROM outbox WHERE event_type = 'node.created'
         AND aggregate_id = $1`,
        [dup.id],
      );
      expect(event.dispatched_at).to.not.equal(null);
      expect(event.attempts).to.equal(3);
      expect(event.last_error).to.equal(null);

      expect((await resolver.describe()).runId).to.equal(firstRun);
      const list = await pending(t);
      expect(list.map((item) => item.id)).to.deep.equal([candidate.id]);
      const charges = await owner().query(
        `SELECT amount FROM credit_ledger WHERE workspace_id = $1 AND kind = 'worker.person_resolve'
         AND idempotency_key = $2`,
        [t.workspace_id, `resolve-${dup.id}`],
      );
      expect(charges).to.deep.equal([{ amount: 0 }]);
      expect((await workflowStatus(`merge-${candidate.id}`)).status).to.equal('RUNNING');
    });
  });

  describe('isolation and validation', () => {
    it('another workspace sees none of the candidates and gets 404 on approve and reject', async () => {
      const mine = await newTenant();
      const theirs = await newTenant();
      await createPerson(mine, 'Edsger Dijkstra');
      await createPerson(mine, 'edsger dijkstra');
      const [candidate] = await pending(mine);

      expect(await pending(theirs)).to.deep.equal([]);
      const approve = await as(theirs.api_key).post(`/v1/ontology/merges/${candidate.id}/approve`, {
        notes: 'mine now',
      });
      expect(approve.status).to.equal(404);
      expect(approve.body).to.have.property('detail');
      expect((await as(theirs.user_jwt).post(`/v1/ontology/merges/${candidate.id}/reject`, {})).status).to.equal(404);

      const [still] = await pending(mine);
      expect(still).to.include({ id: candidate.id, status: 'pending' });
      expect(
        (await owner().query(`SELECT count(*)::int AS n FROM merge_actions WHERE candidate_id = $1`, [candidate.id]))[0]
          .n,
      ).to.equal(0);
    });

    it('404 for an unknown id, 422 for a malformed id or body, 401 without a token', async () => {
      const t = await newTenant();
      const unknown = '00000000-0000-4000-8000-000000000000';
      expect((await as(t.api_key).post(`/v1/ontology/merges/${unknown}/approve`, {})).status).to.equal(404);
      expect((await as(t.api_key).post(`/v1/ontology/merges/${unknown}/reject`, {})).status).to.equal(404);
      // notes are optional, and so is the body itself.
      expect((await request('POST', `/v1/ontology/merges/${unknown}/approve`, { token: t.api_key })).status).to.equal(
        404,
      );
      const malformed = await as(t.api_key).post('/v1/ontology/merges/not-a-uuid/approve', {});
      expect(malformed.status).to.equal(422);
      expect(malformed.body.detail[0].loc).to.deep.equal(['path', 'id']);
      const tooLong = await as(t.api_key).post(`/v1/ontology/merges/${unknown}/reject`, { notes: 'x'.repeat(2001) });
      expect(tooLong.status).to.equal(422);
      expect(tooLong.body.detail[0].loc).to.deep.equal(['body', 'notes']);
      expect((await as(t.api_key).post(`/v1/ontology/merges/${unknown}/reject`, { notes: 42 })).status).to.equal(422);
      expect((await as(t.api_key).post(`/v1/ontology/merges/${unknown}/reject`, { survivor: 'a' })).status).to.equal(
        422,
      );
      expect((await as(t.api_key).get('/v1/ontology/merges?limit=0')).status).to.equal(422);
      expect((await as('nope').get('/v1/ontology/merges')).status).to.equal(401);
    });
  });
  describe('the review workflow (merge-<candidate_id>)', () => {
    it('reports where it stands through its status query, pending to applied', async () => {
      const t = await newTenant();
      await createPerson(t, 'Hedy Lamarr', { email: 'hedy@example.com' });
      await createPerson(t, 'hedy lamarr', { email: 'hedy@example.com' });
      const [candidate] = await pending(t);
      const handle = temporal().workflow.getHandle(`merge-${candidate.id}`);
      expect(await handle.query(mergeStatusQuery)).to.equal('pending');
      expect((await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/approve`, {})).status).to.equal(200);
      expect(await handle.result()).to.deep.equal({ status: 'applied', performedBy: t.user_id });
      expect(await handle.query(mergeStatusQuery)).to.equal('applied');
    });

    it('wakes up, finds its candidate still pending, continues as new, and still takes a decision', async () => {
      const t = await newTenant();
      const candidate = await unreviewedCandidate(t);
      const handle = await startReview(t, candidate.id);
      const firstRun = (await handle.describe()).runId;

      const latest = await eventually(
        async () => {
          const { runId } = await temporal().workflow.getHandle(handle.workflowId).describe();
          return runId !== firstRun ? runId : undefined;
        },
        { what: 'the review to continue as new' },
      );
      const first = await temporal().workflow.getHandle(handle.workflowId, firstRun).describe();
      expect(first.status.name).to.equal('CONTINUED_AS_NEW');
      expect(latest).to.not.equal(firstRun);
      expect(await handle.query(mergeStatusQuery)).to.equal('pending');
      expect(await candidateRow(candidate.id)).to.equal('pending');

      const response = await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/reject`, { notes: 'two Adas' });
      expect(response.status, response.text).to.equal(200);
      expect(response.body.candidate.status).to.equal('rejected');
      expect(await handle.result()).to.deep.equal({ status: 'rejected', performedBy: t.user_id });
    });

    it('closes itself at the wake-up when a node of its pair was deleted, superseding the candidate', async () => {
      const t = await newTenant();
      const candidate = await unreviewedCandidate(t);
      const handle = await startReview(t, candidate.id);
      expect((await as(t.api_key).delete(`/v1/ontology/nodes/${candidate.duplicate.id}`)).status).to.equal(200);

      expect(await handle.result()).to.deep.equal({ status: 'closed', reason: 'candidate is superseded' });
      expect(await candidateRow(candidate.id)).to.equal('superseded');
      expect(await pending(t)).to.deep.equal([]);
      expect((await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/approve`, {})).status).to.equal(409);
    });

    it('closes itself at the wake-up when its candidate was resolved elsewhere', async () => {
      const t = await newTenant();
      const candidate = await unreviewedCandidate(t);
      const handle = await startReview(t, candidate.id);
      await owner().query(`UPDATE merge_candidates SET status = 'rejected', resolved_at = now() WHERE id = $1`, [
        candidate.id,
      ]);
      expect(await handle.result()).to.deep.equal({ status: 'closed', reason: 'candidate is rejected' });
    });

    it('approving a pair with a deleted node answers 409, supersedes the candidate and ends the review', async () => {
      const t = await newTenant();
      await createPerson(t, 'Mary Jackson');
      const dup = await createPerson(t, 'mary jackson');
      const [candidate] = await pending(t);
      expect((await as(t.api_key).delete(`/v1/ontology/nodes/${dup.id}`)).status).to.equal(200);

      const response = await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/approve`, {});
      expect(response.status, response.text).to.equal(409);
      expect(response.body.detail).to.match(/no longer live/);
      expect(await candidateRow(candidate.id)).to.equal('superseded');
      const result = await temporal().workflow.getHandle(`merge-${candidate.id}`).result();
      expect(result.status).to.equal('closed');
      expect((await nodeRow(candidate.survivor_node_id)).is_deleted).to.equal(false);
    });

    it('a decision that keeps failing answers 503 with Retry-After and leaves the review open', async () => {
      const t = await newTenant();
      await createPerson(t, 'Annie Easley');
      await createPerson(t, 'annie easley');
      const [candidate] = await pending(t);
      // A fault injected in Postgres: recording this candidate's action fails on every attempt.
      const fault = `weft_test_fault_${candidate.id.replaceAll('-', '')}`;
      await owner().query(
        `CREATE FUNCTION ${fault}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected'; END $$;
         CREATE TRIGGER ${fault} BEFORE INSERT ON merge_actions FOR EACH ROW
           WHEN (NEW.candidate_id = '${candidate.id}') EXECUTE FUNCTION ${fault}()`,
      );
      try {
        const failed = await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/reject`, {});
        expect(failed.status, failed.text).to.equal(503);
        expect(failed.headers.get('retry-after')).to.equal('5');
        expect(failed.body.detail).to.be.a('string');
      } finally {
        await owner().query(`DROP TRIGGER ${fault} ON merge_actions; DROP FUNCTION ${fault}()`);
      }
      const handle = temporal().workflow.getHandle(`merge-${candidate.id}`);
      expect(await handle.query(mergeStatusQuery)).to.equal('pending');
      expect(await candidateRow(candidate.id)).to.equal('pending');

      const retried = await as(t.api_key).post(`/v1/ontology/merges/${candidate.id}/reject`, {});
      expect(retried.status, retried.text).to.equal(200);
      expect(await handle.result()).to.deep.equal({ status: 'rejected', performedBy: t.user_id });
    });
  });
  describe('deadline', () => {
    it('answers 504 when no worker takes the decision in time, and leaves the candidate pending', async () => {
      const { runtime } = getStack();
      // The real app and database, with decisions sent to a task queue that no worker serves.
      const unserved = new WorkflowStarter(runtime.temporal.client, `weft-unserved-${Date.now()}`);
      const merges = createMergeService({
        uow: runtime.uow,
        temporal: { ...runtime.temporal, workflows: unserved },
        decisionWaitMs: 1500,
      });
      const server: Server = createApp({ ...runtime, services: { ...runtime.services, merges } }).listen(
        0,
        '127.0.0.1',
      );
      await new Promise<void>((resolve) => server.once('listening', () => resolve()));
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const t = await newTenant();
      const candidate = await unreviewedCandidate(t);
      try {
        const started = Date.now();
        const response = await as(t.api_key, baseUrl).post(`/v1/ontology/merges/${candidate.id}/approve`, {});
        expect(response.status, response.text).to.equal(504);
        expect(response.body.detail).to.be.a('string');
        expect(Date.now() - started).to.be.lessThan(8000);
        expect(await candidateRow(candidate.id)).to.equal('pending');
        expect((await nodeRow(candidate.duplicate.id)).is_deleted).to.equal(false);
      } finally {
        await new Promise<void>((resolve) => server.close(() => resolve()));
        // Update-with-start started the review on the unserved queue: stop it.
        await temporal().workflow.getHandle(`merge-${candidate.id}`).terminate('test cleanup');
      }
    });
  });
});
