import { expect } from 'chai';
import { decodeKeysetCursor, encodeKeysetCursor } from '../../src/platform/db/keyset-cursor';
import { ValidationFailedError } from '../../src/platform/errors';

const ID = '3f2c1a9e-8b7d-4c6e-9f01-23456789abcd';
const cursorOf = (text: string) => Buffer.from(text).toString('base64url');

describe('keyset cursors (GET /v1/runs, GET /v1/billing/ledger)', () => {
  it('round-trip what Postgres prints for created_at, microseconds included', () => {
    for (const createdAt of [
      '2026-11-23 11:30:00.123456+00',
      '2026-02-28 23:59:59+05:30',
      '2026-11-23 11:30:00-08',
      '2026-01-01 00:00:00+15:59:59',
    ]) {
      expect(decodeKeysetCursor(encodeKeysetCursor(createdAt, ID))).to.deep.equal({ createdAt, id: ID });
    }
  });

  it('refuse, as a 422 on query.cursor, anything Postgres would not read as (timestamptz, uuid)', () => {
    const forged = [
      `1|${ID}`, // Date.parse accepts it; Postgres does not
      `foo 2020|${ID}`,
      '2026-11-23 11:30:00+00|------------------------------------',
      `2026-02-31 10:00:00+00|${ID}`, // no such day
      `2026-11-23 24:00:00+00|${ID}`,
      `2026-11-23 11:30:00+00|${ID}|extra`,
      `2026-11-23 11:30:00+00|${ID.toUpperCase()}x`,
      'not base64 at all',
      // the review's L-1 offsets: Postgres refuses a displacement past ±15:59:59
      `2026-01-01 00:00:00+99|${ID}`,
      `2026-01-01 00:00:00+15:99|${ID}`,
      `2026-01-01 00:00:00+16|${ID}`,
      `2026-01-01 00:00:00-15:59:60|${ID}`,
    ];
    for (const text of forged) {
      expect(() => decodeKeysetCursor(cursorOf(text)), text)
        .to.throw(ValidationFailedError)
        .with.property('issues')
        .that.deep.equals([{ loc: ['query', 'cursor'], msg: 'Not a cursor of this list', type: 'value_error' }]);
    }
  });
});
