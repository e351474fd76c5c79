import { expect } from 'chai';
import { as } from './helpers/http';
import { newTenant } from './helpers/tenants';

/** A metered search: one `ontology.search.hybrid` charge (1 credit), confirmed when it answers. */
const search = async (token: string) => {
  const answer = await as(token).post('/v1/ontology/search', { q: 'anything', top_k: 1 });
  expect(answer.status, answer.text).to.equal(200);
};

describe('billing: GET /v1/billing/ledger', () => {
  it('answers the balance and the workspace’s charges newest first, paged by cursor', async () => {
    const t = await newTenant(10);
    for (let i = 0; i < 3; i++) await search(t.api_key);

    const first = await as(t.api_key).get('/v1/billing/ledger?limit=2');
    expect(first.status, first.text).to.equal(200);
    expect(first.body).to.include({ balance: 7, locked: false });
    expect(first.body.entries).to.have.length(2);
    for (const entry of first.body.entries) {
      expect(entry).to.include({
        kind: 'ontology.search.hybrid',
        amount: -1,
        settlement: 'confirmed',
        refund_of: null,
      });
    }
    expect(Date.parse(first.body.entries[0].created_at)).to.be.at.least(Date.parse(first.body.entries[1].created_at));
    expect(first.body.next_cursor).to.be.a('string');

    const second = await as(t.api_key).get(`/v1/billing/ledger?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.status, second.text).to.equal(200);
    expect(second.body.entries).to.have.length(1);
    expect(second.body.next_cursor).to.equal(null);
    const ids = [...first.body.entries, ...second.body.entries].map((entry: any) => entry.ledger_id);
    expect(new Set(ids).size).to.equal(3);
  });

  it('lists nothing of another workspace, and not the tenant-level grant', async () => {
    const mine = await newTenant(5);
    await search(mine.api_key);
    const stranger = await newTenant(3);
    const theirs = await as(stranger.api_key).get('/v1/billing/ledger');
    expect(theirs.status).to.equal(200);
    expect(theirs.body).to.include({ balance: 3 });
    expect(theirs.body.entries).to.deep.equal([]);
    const own = await as(mine.api_key).get('/v1/billing/ledger');
    expect(own.body.entries.map((entry: any) => entry.kind)).to.deep.equal(['ontology.search.hybrid']);
  });

  it('needs billing:read, and refuses a cursor it did not make', async () => {
    const t = await newTenant();
    const key = await as(t.user_jwt).post('/v1/auth/me/api-keys', { name: 'graph only', scopes: ['ontology:read'] });
    expect(key.status, key.text).to.equal(201);
    const refused = await as(key.body.token).get('/v1/billing/ledger');
    expect(refused.status).to.equal(403);

    const bad = await as(t.api_key).get('/v1/billing/ledger?cursor=not-a-cursor');
    expect(bad.status).to.equal(422);
    expect(bad.body.detail[0].loc).to.deep.equal(['query', 'cursor']);
  });

  it('answers 422, never 500, for the review’s forged cursors on /v1/runs and /v1/billing/ledger (L-1)', async () => {
    const t = await newTenant();
    const id = '00000000-0000-4000-8000-000000000000';
    const forged = ['2026-01-01 00:00:00+99', '2026-01-01 00:00:00+15:99', '2026-01-01 00:00:00+16'];
    for (const path of ['/v1/runs', '/v1/billing/ledger']) {
      for (const createdAt of forged) {
        const cursor = Buffer.from(`${createdAt}|${id}`).toString('base64url');
        const answer = await as(t.api_key).get(`${path}?cursor=${cursor}`);
        expect(answer.status, `${path} ${createdAt}: ${answer.text}`).to.equal(422);
        expect(answer.body.detail[0].loc).to.deep.equal(['query', 'cursor']);
      }
    }
  });
});
