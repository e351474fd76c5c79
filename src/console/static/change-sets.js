import { api } from './api.js';
import { fill, h, messageArea, readable, settleCard, when } from './dom.js';

/*
 * A staged change-set's approval (issue 31 part 4) in the approvals inbox: the change-set as a diff
 * against the graph now (nodes to create or reference, edges, property changes with their value at
 * staging, now and after, deletions, and the conflicts an apply would report), with Apply and Reject. Both go
 * through the approval's resolve, under the same separation rules as a run's.
 */

const value = (item) => (item === null || item === undefined ? '∅' : JSON.stringify(item));

function diffOf(changeSet) {
  const preview = changeSet.preview;
  if (!preview) return h('p', { class: 'muted' }, `No longer pending: ${changeSet.status}.`);
  const sign = { create: '+', reference: '=', missing: '!', exists: '=' };
  return [
    h(
      'ul',
      { class: 'diff nodes' },
      preview.nodes.map((node) =>
        h(
          'li',
          { class: `diff-${node.action}` },
          `${sign[node.action]} ${node.type} “${node.name}”`,
          node.action === 'reference' ? ' (existing node)' : '',
          node.action === 'missing' ? ' (deleted since staging)' : '',
          Object.keys(node.properties).length ? readable(node.properties) : '',
        ),
      ),
    ),
    h(
      'ul',
      { class: 'diff edges' },
      preview.edges.map((edge) =>
        h(
          'li',
          { class: `diff-${edge.action}` },
          `${sign[edge.action]} ${edge.source} —${edge.type}→ ${edge.target}`,
          edge.action === 'exists' ? ' (already in the graph)' : '',
          edge.evidence ? h('q', {}, edge.evidence) : '',
        ),
      ),
    ),
    preview.property_changes.length === 0
      ? ''
      : h(
          'ul',
          { class: 'diff properties' },
          preview.property_changes.map((change) =>
            h(
              'li',
              { class: change.stale ? 'diff-missing' : 'diff-create' },
              `~ ${change.name}.${change.key}: ${value(change.before)} → ${value(change.after)}`,
              change.stale ? ` (now ${value(change.now)}: changed since staging)` : '',
            ),
          ),
        ),
    (preview.deletions ?? []).length === 0
      ? ''
      : h(
          'ul',
          { class: 'diff deletions' },
          preview.deletions.map((deletion) =>
            h(
              'li',
              { class: 'diff-missing' },
              `− delete ${deletion.label.replace(/^The /, 'the ')}`,
              deletion.live ? '' : ' (already gone)',
            ),
          ),
        ),
    preview.conflicts.length === 0
      ? ''
      : h(
          'p',
          { class: 'error conflicts' },
          `Applying now would write nothing: ${preview.conflicts.map((c) => c.message).join('; ')}`,
        ),
  ];
}

export function changeSetCard(approval, forget) {
  const diff = h('div', { class: 'diff-view' }, h('span', { class: 'muted' }, 'Loading the change-set…'));
  const source = h('p', { class: 'muted' }, 'Change-set · requested ', when(approval.requested_at));
  const notes = h('textarea', { rows: 2, placeholder: 'Notes (optional)', maxlength: 2000, 'aria-label': 'Notes' });
  const message = messageArea();
  const apply = h('button', { type: 'button', class: 'apply' }, 'Apply');
  const reject = h('button', { type: 'button', class: 'reject' }, 'Reject');
  const element = h(
    'article',
    {
      class: 'card approval change-set',
      'data-approval-id': approval.approval_id,
      'data-change-set-id': approval.change_set_id,
      'data-requested-at': approval.requested_at,
    },
    h('header', {}, h('h2', {}, 'Staged change-set'), source),
    h('section', {}, h('h3', {}, 'Proposed changes'), diff),
    notes,
    h('div', { class: 'actions' }, apply, reject),
    message.element,
  );

  async function load() {
    try {
      const changeSet = await api('GET', `/v1/ontology/change-sets/${approval.change_set_id}`);
      const from =
        changeSet.source.kind === 'prompt'
          ? `an update prompt (${changeSet.source.prompt_id})`
          : `${changeSet.source.capability} by ${changeSet.staged_by_credential.kind}`;
      fill(source, `Change-set from ${from} · requested `, when(approval.requested_at));
      fill(diff, diffOf(changeSet));
    } catch (error) {
      fill(diff, h('span', { class: 'error' }, `Could not load the change-set: ${error.message}`));
    }
  }

  async function resolve(decision) {
    apply.disabled = true;
    reject.disabled = true;
    message.clear();
    const body = { decision };
    if (notes.value.trim()) body.notes = notes.value.trim();
    try {
      const answer = await api('POST', `/v1/approvals/${approval.approval_id}/resolve`, body);
      const outcome = answer.change_set;
      if (outcome.status === 'applied') {
        message.ok(
          `Applied: ${outcome.applied.node_ids.length} node(s), ${outcome.applied.edge_ids.length} new edge(s).`,
        );
      } else if (outcome.status === 'conflicted') {
        message.error(`Conflicts; nothing was written: ${outcome.conflicts.map((c) => c.message).join('; ')}`);
      } else {
        message.ok('Rejected: nothing was written.');
      }
    } catch (error) {
      message.error(`Could not resolve (${error.status || 'network error'}): ${error.message}`);
      if (error.status !== 409) {
        apply.disabled = false;
        reject.disabled = false;
        return;
      }
    }
    settleCard(element, notes, forget);
  }
  apply.addEventListener('click', () => resolve('APPROVED'));
  reject.addEventListener('click', () => resolve('REJECTED'));

  // The diff is against the graph now, so each refresh reads it again.
  const refreshDecisions = () => (element.classList.contains('settled') ? undefined : load());
  const noLongerPending = () => !element.classList.contains('settled') && !notes.value.trim();
  return { element, refreshDecisions, noLongerPending };
}
