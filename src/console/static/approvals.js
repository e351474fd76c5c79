import { api, query } from './api.js';
import { fill, h, messageArea, readable, shortId, when } from './dom.js';

const REFRESH_MS = 5000;

/**
 * Pending approvals, newest first, refreshed every few seconds. Cards are kept by approval id, so a
 * refresh never wipes notes being typed. An untouched card whose approval was resolved elsewhere
 * disappears; one with notes typed, or showing an outcome, stays until dismissed.
 */
export function approvalsView(main) {
  const status = h('p', { class: 'muted' });
  const list = h('div', { class: 'cards', id: 'approvals' });
  const empty = h('p', { class: 'empty muted', hidden: true }, 'Nothing waits for a decision.');
  fill(main, h('h1', {}, 'Approvals'), status, empty, list);
  const cards = new Map();
  let stopped = false;

  async function refresh() {
    try {
      const { approvals } = await api('GET', `/v1/approvals${query({ status: 'pending', limit: 50 })}`);
      if (stopped) return;
      const ids = new Set(approvals.map((approval) => approval.approval_id));
      for (const [id, card] of cards) {
        if (!ids.has(id) && card.noLongerPending()) {
          card.element.remove();
          cards.delete(id);
        }
      }
      // Newest first: each new card goes before the first card that is older than it.
      for (const approval of approvals) {
        if (cards.has(approval.approval_id)) continue;
        const card = approvalCard(approval, () => cards.delete(approval.approval_id));
        cards.set(approval.approval_id, card);
        const older = [...list.children].find((element) => element.dataset.requestedAt < approval.requested_at);
        list.insertBefore(card.element, older || null);
      }
      for (const approval of approvals) cards.get(approval.approval_id)?.refreshDecisions();
      empty.hidden = cards.size > 0;
      fill(
        status,
        `${approvals.length} pending · refreshed `,
        when(new Date().toISOString()),
        ` · every ${REFRESH_MS / 1000} s`,
      );
    } catch (error) {
      if (!stopped) fill(status, h('span', { class: 'error' }, `Could not load approvals: ${error.message}`));
    }
  }

  void refresh();
  const timer = setInterval(refresh, REFRESH_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

function approvalCard(approval, forget) {
  const decisions = h('div', { class: 'decisions' }, h('span', { class: 'muted' }, 'Loading the run…'));
  const notes = h('textarea', { rows: 2, placeholder: 'Notes (optional)', maxlength: 2000, 'aria-label': 'Notes' });
  const message = messageArea();
  const approve = h('button', { type: 'button', class: 'approve' }, 'Approve');
  const reject = h('button', { type: 'button', class: 'reject' }, 'Reject');
  const element = h(
    'article',
    { class: 'card approval', 'data-approval-id': approval.approval_id, 'data-requested-at': approval.requested_at },
    h(
      'header',
      {},
      h('h2', {}, approval.step.tool),
      h(
        'p',
        { class: 'muted' },
        `Step ${approval.step.step_no} of run `,
        h('a', { href: `#/runs/${approval.execution_id}` }, shortId(approval.execution_id)),
        ' · requested ',
        when(approval.requested_at),
      ),
    ),
    h('section', {}, h('h3', {}, 'Input'), readable(approval.step.input)),
    h('section', {}, h('h3', {}, 'Decisions recorded by the run'), decisions),
    notes,
    h('div', { class: 'actions' }, approve, reject),
    message.element,
  );

  async function resolve(decision) {
    approve.disabled = reject.disabled = true;
    message.clear();
    const body = { decision };
    if (notes.value.trim()) body.notes = notes.value.trim();
    try {
      await api('POST', `/v1/approvals/${approval.approval_id}/resolve`, body);
      message.ok(decision === 'APPROVED' ? 'Approved: the run goes on.' : 'Rejected: the run stops here.');
    } catch (error) {
      if (error.status !== 409) {
        message.error(`Could not resolve (${error.status || 'network error'}): ${error.message}`);
        approve.disabled = reject.disabled = false;
        return;
      }
      message.error(`Someone else resolved this first; nothing changed (409): ${error.message}`);
    }
    element.classList.add('settled');
    notes.disabled = true;
    const dismiss = () => {
      element.remove();
      forget();
    };
    element.append(h('button', { type: 'button', class: 'dismiss', onclick: dismiss }, 'Dismiss'));
  }
  approve.addEventListener('click', () => resolve('APPROVED'));
  reject.addEventListener('click', () => resolve('REJECTED'));

  async function refreshDecisions() {
    if (element.classList.contains('settled')) return;
    try {
      const run = await api('GET', `/v1/runs/${approval.execution_id}`);
      const recorded = run.steps.filter((step) => step.kind === 'DECISION');
      fill(
        decisions,
        recorded.length === 0
          ? h('span', { class: 'muted' }, 'None yet.')
          : h(
              'ul',
              {},
              recorded.map((step) => decisionItem(step)),
            ),
      );
    } catch (error) {
      fill(decisions, h('span', { class: 'error' }, `Could not load the run: ${error.message}`));
    }
  }
  const stale = h('p', { class: 'stale', hidden: true }, 'No longer pending: resolved elsewhere, or its run ended.');
  element.insertBefore(stale, message.element);
  /** Whether the card may go now that its approval is no longer pending (else it says why it stays). */
  function noLongerPending() {
    if (element.classList.contains('settled')) return false;
    if (!notes.value.trim()) return true;
    stale.hidden = false;
    return false;
  }
  return { element, refreshDecisions, noLongerPending };
}

/** A DECISION step; a superseded one is struck through. */
export function decisionItem(step) {
  const text = [step.input.decision, step.input.rationale ? ` (${step.input.rationale})` : ''];
  return h('li', { class: step.superseded ? 'superseded' : '' }, step.superseded ? h('s', {}, text) : text);
}
