import { ValidationFailedError } from '../platform/errors';
import type { ContextPageStarts, SymbolContextRow } from './repository';

/*
 * Paging of symbol-context's tests, callers and callees (issue 30): each list is ordered by (name,
 * id) and a cursor is the opaque (name, id) of a page's last row; the next page starts after it.
 */

const PAGED = ['tests', 'callers', 'callees'] as const;
type PagedList = (typeof PAGED)[number];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const encode = (row: { name: string; id: string }) =>
  Buffer.from(JSON.stringify([row.name, row.id])).toString('base64url');

/** The request's cursors as page starts; a cursor no answer made is a 422 on its field, never a 500. */
export function contextPageStarts(cursors: Partial<Record<PagedList, string | null>> | undefined): ContextPageStarts {
  const starts: ContextPageStarts = {};
  for (const list of PAGED) {
    const cursor = cursors?.[list];
    if (cursor === undefined || cursor === null) continue;
    let pair: unknown;
    try {
      pair = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    } catch {
      pair = undefined;
    }
    const [name, id] = Array.isArray(pair) && pair.length === 2 ? pair : [];
    if (typeof name !== 'string' || typeof id !== 'string' || !UUID.test(id)) {
      throw new ValidationFailedError([
        { loc: ['body', 'cursors', list], msg: 'Not a cursor of this list', type: 'value_error' },
      ]);
    }
    starts[list] = { name, id };
  }
  return starts;
}

/** The paged lists cut to `limit` (the statement reads one more), with each one's next cursor or null. */
export function nextCursors(row: SymbolContextRow, limit: number) {
  const context = { ...row };
  const next_cursors = { tests: null, callers: null, callees: null } as Record<PagedList, string | null>;
  for (const list of PAGED) {
    const page = row[list].slice(0, limit);
    context[list] = page;
    const last = page.at(-1);
    if (row[list].length > limit && last) next_cursors[list] = encode(last);
  }
  return { context, next_cursors };
}
