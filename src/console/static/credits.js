import { api, query } from './api.js';
import { fill, h, when } from './dom.js';

/** The tenant's balance and the workspace's ledger (GET /v1/billing/ledger), newest first. */
export function creditsView(main) {
  const balance = h('p', { class: 'balance', id: 'balance' }, 'Loading…');
  const rows = h('tbody');
  const more = h('button', { type: 'button', hidden: true }, 'Older entries');
  const status = h('p', { class: 'muted' });
  fill(
    main,
    h('h1', {}, 'Credits'),
    balance,
    h('h2', {}, 'Ledger of this workspace'),
    h(
      'p',
      { class: 'muted' },
      'Charges are negative, refunds positive; an operator’s grant is tenant-wide and shows in the balance only.',
    ),
    status,
    h(
      'table',
      { class: 'ledger' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['When', 'Kind', 'Amount', 'Settlement', 'Refund of'].map((title) => h('th', {}, title)),
        ),
      ),
      rows,
    ),
    more,
  );
  let cursor = null;

  async function load(append) {
    try {
      const page = await api('GET', `/v1/billing/ledger${query({ limit: 50, cursor: append ? cursor : '' })}`);
      fill(balance, `${page.balance} credits`, page.locked ? h('span', { class: 'badge failed' }, 'locked') : '');
      const items = page.entries.map((entry) =>
        h(
          'tr',
          {},
          h('td', {}, when(entry.created_at)),
          h('td', {}, entry.kind),
          h('td', { class: `number ${entry.amount < 0 ? 'charge' : 'refund'}` }, entry.amount),
          h('td', {}, entry.settlement || ''),
          h('td', { class: 'muted' }, entry.refund_of ? entry.refund_of.slice(0, 8) : ''),
        ),
      );
      if (append) rows.append(...items);
      else fill(rows, items);
      cursor = page.next_cursor;
      more.hidden = !cursor;
      fill(status, rows.children.length === 0 ? 'No charges in this workspace yet.' : '');
    } catch (error) {
      fill(status, h('span', { class: 'error' }, `Could not load the ledger: ${error.message}`));
    }
  }
  more.addEventListener('click', () => load(true));
  void load(false);
}
