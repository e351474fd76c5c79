import { api, query } from './api.js';
import { budgetCard } from './budgets.js';
import { changeSetCard } from './change-sets.js';
import { fill, h, messageArea, readable, settleCard, shortId, when } from './dom.js';
import { inputSchemas, schemaForm } from './schema-form.js';

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
        // A staged change-set's approval is a diff with Apply and Reject (issue 31 part 4); a budget
        // approval, the spend and the limits to raise (issue 40 item 4).
        const make = { change_set: changeSetCard, budget: budgetCard }[approval.subject] ?? approvalCard;
        const card = make(approval, () => cards.delete(approval.approval_id));
        cards.set(approval.approval_id, card);
        const older = [...list.children].find((element) => element.dataset.requestedAt < approval.requested_at);
        list.insertBefore(card.element, older || null);
      }
      for (const approval of approvals) cards.get(approval.approval_id)?.refreshDecisions(approval);
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

/** Which rule asked for the approval (issue 32): its version and index, or the step itself. */
function askedBy(approval) {
  const decision = approval.policy_decision;
  if (!decision || decision.version === 0) return 'Asked for by the step itself (requires_approval).';
  if (decision.rule === null) {
    return `Asked for by the step itself, or the default action of the approval rules, version ${decision.version}.`;
  }
  return `Asked for by the workspace’s approval rules, version ${decision.version}, rule ${decision.rule}.`;
}

/** The deadline, what happens then, and how often it escalated; nothing without one. */
function deadlineText(approval) {
  if (!approval.expires_at) return [h('span', { class: 'muted' }, 'No deadline.')];
  const outcome = { reject: 'it is rejected', approve: 'it is approved', escalate: 'it escalates' };
  return [
    'Deadline ',
    when(approval.expires_at),
    `: if nobody decides by then, ${outcome[approval.deadline?.on_expiry] ?? 'its rule applies'}.`,
    approval.escalations ? ` Escalated ${approval.escalations}×.` : '',
  ];
}

/** The quorum and the votes so far. */
function votesText(approval) {
  if (!approval.approvers) return [h('span', { class: 'muted' }, 'One decision by anyone allowed to resolve.')];
  const { min, from } = approval.approvers;
  const approving = approval.votes.filter((vote) => vote.decision === 'APPROVED').length;
  const who = from === 'any_member' ? 'any member' : from.map(shortId).join(', ');
  return [
    h('p', {}, `${approving} of ${min} approvals needed, from ${who}.`),
    approval.votes.length === 0
      ? h('p', { class: 'muted' }, 'No votes yet.')
      : h(
          'ul',
          { class: 'votes' },
          approval.votes.map((vote) =>
            h(
              'li',
              {},
              `${shortId(vote.user_id)}: ${vote.decision.toLowerCase()} · `,
              when(vote.voted_at),
              vote.notes ? h('q', {}, vote.notes) : '',
            ),
          ),
        ),
  ];
}

function approvalCard(approval, forget) {
  const decisions = h('div', { class: 'decisions' }, h('span', { class: 'muted' }, 'Loading the run…'));
  const notes = h('textarea', { rows: 2, placeholder: 'Notes (optional)', maxlength: 2000, 'aria-label': 'Notes' });
  const message = messageArea();
  const approve = h('button', { type: 'button', class: 'approve' }, 'Approve');
  const reject = h('button', { type: 'button', class: 'reject' }, 'Reject');
  const editToggle = h('button', { type: 'button', class: 'edit' }, 'Edit the input…');
  const approveEdited = h('button', { type: 'button', class: 'approve-edited' }, 'Approve with these edits');
  const editor = h('section', { class: 'editor', hidden: true }, h('h3', {}, 'Edit the input'));
  const respondText = h('textarea', {
    rows: 2,
    class: 'respond-message',
    placeholder: 'What the model receives instead of the tool’s result',
    maxlength: 2000,
    'aria-label': 'Response to the model',
  });
  const respond = h('button', { type: 'button', class: 'respond' }, 'Respond instead');
  const responder = h(
    'section',
    { class: 'responder', hidden: true },
    h('h3', {}, 'Respond to the model (the step does not run)'),
    respondText,
    respond,
  );
  const policy = h('p', { class: 'policy' }, askedBy(approval));
  const deadline = h('p', { class: 'deadline' }, deadlineText(approval));
  const votes = h('div', { class: 'quorum' }, votesText(approval));
  const buttons = [approve, reject, editToggle, approveEdited, respond];
  let form;
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
    policy,
    deadline,
    h('section', {}, h('h3', {}, 'Votes'), votes),
    h('section', {}, h('h3', {}, 'Input'), readable(approval.step.input)),
    h('section', {}, h('h3', {}, 'Decisions recorded by the run'), decisions),
    notes,
    h('div', { class: 'actions' }, approve, reject, editToggle),
    editor,
    responder,
    message.element,
  );

  const OUTCOMES = {
    APPROVED: 'Approved: the run goes on.',
    REJECTED: 'Rejected: the run stops here.',
    RESPOND: 'Responded: the model gets your message and plans again.',
  };

  async function resolve(decision, extra = {}) {
    for (const button of buttons) button.disabled = true;
    message.clear();
    const body = { decision, ...extra };
    if (notes.value.trim()) body.notes = notes.value.trim();
    try {
      const answer = await api('POST', `/v1/approvals/${approval.approval_id}/resolve`, body);
      if (answer.status === 'pending') {
        message.ok(`Your vote counts; ${answer.approvals_remaining} more approval(s) needed.`);
      } else {
        message.ok(extra.input ? 'Approved with your edits: the run goes on.' : OUTCOMES[decision]);
      }
    } catch (error) {
      if (error.status !== 409) {
        message.error(`Could not resolve (${error.status || 'network error'}): ${error.message}`);
        for (const button of buttons) button.disabled = false;
        return;
      }
      const voted = error.body?.detail?.error === 'already_voted';
      message.error(
        voted
          ? `You have voted on this approval already (409): ${error.message}`
          : `Someone else resolved this first; nothing changed (409): ${error.message}`,
      );
    }
    settleCard(element, notes, forget);
  }
  approve.addEventListener('click', () => resolve('APPROVED'));
  reject.addEventListener('click', () => resolve('REJECTED'));
  respond.addEventListener('click', () => {
    if (!respondText.value.trim()) {
      message.error('Write the response the model should receive first.');
      return;
    }
    void resolve('RESPOND', { message: respondText.value.trim() });
  });
  editToggle.addEventListener('click', async () => {
    if (!editor.hidden) {
      editor.hidden = true;
      return;
    }
    editToggle.disabled = true;
    try {
      const schemas = await inputSchemas();
      form = schemaForm(schemas.get(approval.step.tool), approval.step.input);
      editor.replaceChildren(h('h3', {}, 'Edit the input'), form.element, approveEdited);
      editor.hidden = false;
    } catch (error) {
      message.error(`Could not load the tool’s schema: ${error.message}`);
    } finally {
      editToggle.disabled = false;
    }
  });
  approveEdited.addEventListener('click', () => {
    let input;
    try {
      input = form.read();
    } catch (error) {
      message.error(error.message);
      return;
    }
    void resolve('APPROVED', { input });
  });

  async function refreshDecisions(latest = approval) {
    if (element.classList.contains('settled')) return;
    // The deadline moves on an escalation, and votes come in: shown as the list last read them.
    fill(deadline, deadlineText(latest));
    fill(votes, votesText(latest));
    try {
      const run = await api('GET', `/v1/runs/${approval.execution_id}`);
      // RESPOND answers an llm run's tool call; an edit is one approval, not a quorum's.
      responder.hidden = run.agent !== 'llm';
      editToggle.hidden = (latest.approvers?.min ?? 1) > 1;
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
