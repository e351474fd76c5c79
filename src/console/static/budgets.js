import { api } from './api.js';
import { h, messageArea, settleCard, shortId, when } from './dom.js';

// Issue 40 item 4: a budget approval's card. The run's next step would exceed its budget: the card shows
// the spend against each limit and what the step adds; Approve raises the limits typed (prefilled with
// the least that lets the step run), Reject ends the run FAILED `budget_exhausted`.

const LIMITS = [
  ['max_credits', 'Credits', 'credits'],
  ['max_steps', 'Steps', 'steps'],
  ['max_duration_seconds', 'Duration (s)', 'duration_seconds'],
];

/** The least each exceeded limit must be raised to for the step to run; the current limit otherwise. */
function leastRaise(ask, limit) {
  if (!ask.exceeded.includes(limit)) return ask.limits[limit];
  if (limit === 'max_credits') return ask.spent.credits + ask.step_credits;
  if (limit === 'max_steps') return ask.spent.steps + 1;
  return ask.spent.duration_seconds + 3600;
}

export function budgetCard(approval, forget) {
  const ask = approval.budget;
  const notes = h('textarea', { rows: 2, placeholder: 'Notes (optional)', maxlength: 2000, 'aria-label': 'Notes' });
  const message = messageArea();
  const approve = h('button', { type: 'button', class: 'approve' }, 'Approve with this budget');
  const reject = h('button', { type: 'button', class: 'reject' }, 'Reject');
  const inputs = new Map();
  const rows = LIMITS.map(([limit, label, spentKey]) => {
    const value = leastRaise(ask, limit);
    const input = h('input', { type: 'number', min: 0, step: 1, 'aria-label': `New ${label}`, name: limit });
    if (value !== undefined) input.value = String(value);
    inputs.set(limit, input);
    const over = ask.exceeded.includes(limit);
    return h(
      'tr',
      { class: over ? 'exceeded' : '' },
      h('th', {}, label),
      h('td', {}, String(ask.spent[spentKey])),
      h('td', {}, ask.limits[limit] === undefined ? '—' : String(ask.limits[limit])),
      h('td', {}, input),
    );
  });
  const element = h(
    'article',
    {
      class: 'card approval budget',
      'data-approval-id': approval.approval_id,
      'data-requested-at': approval.requested_at,
    },
    h(
      'header',
      {},
      h('h2', {}, `Budget: ${approval.step.tool}`),
      h(
        'p',
        { class: 'muted' },
        `Step ${approval.step.step_no} of run `,
        h('a', { href: `#/runs/${approval.execution_id}` }, shortId(approval.execution_id)),
        ` would exceed its budget (${ask.exceeded.join(', ')}) · it costs ${ask.step_credits} credit(s) · requested `,
        when(approval.requested_at),
      ),
    ),
    h(
      'table',
      { class: 'budget-spend' },
      h('tr', {}, h('th', {}, ''), h('th', {}, 'Spent'), h('th', {}, 'Limit'), h('th', {}, 'New limit')),
      rows,
    ),
    notes,
    h('div', { class: 'actions' }, approve, reject),
    message.element,
  );

  async function resolve(decision) {
    approve.disabled = true;
    reject.disabled = true;
    message.clear();
    const body = { decision };
    if (decision === 'APPROVED') {
      body.edits = {};
      for (const [limit, input] of inputs) if (input.value !== '') body.edits[limit] = Number(input.value);
    }
    if (notes.value.trim()) body.notes = notes.value.trim();
    try {
      await api('POST', `/v1/approvals/${approval.approval_id}/resolve`, body);
      message.ok(decision === 'APPROVED' ? 'Budget raised: the run goes on.' : 'Rejected: the run ends here.');
    } catch (error) {
      message.error(`Could not resolve (${error.status || 'network error'}): ${error.message}`);
      if (error.status !== 409) {
        approve.disabled = false;
        reject.disabled = false;
        return;
      }
    }
    settleCard(element, notes, forget);
  }
  approve.addEventListener('click', () => resolve('APPROVED'));
  reject.addEventListener('click', () => resolve('REJECTED'));

  const refreshDecisions = () => undefined;
  const noLongerPending = () => !element.classList.contains('settled') && !notes.value.trim();
  return { element, refreshDecisions, noLongerPending };
}
