import { api, query } from './api.js';
import { fill, h, messageArea, readable, when } from './dom.js';

const REASONS = {
  email_match: 'same email',
  normalized_name_match: 'same name (normalised)',
};

/** Pending merge candidates, the two people side by side, with approve / reject and notes. */
export function mergesView(main) {
  const status = h('p', { class: 'muted' });
  const list = h('div', { class: 'cards', id: 'merges' });
  fill(main, h('h1', {}, 'Merge queue'), status, list);
  let stopped = false;

  async function load() {
    fill(status, 'Loading…');
    try {
      const candidates = await api('GET', `/v1/ontology/merges${query({ limit: 50 })}`);
      if (stopped) return;
      fill(
        list,
        candidates.map((candidate) => candidateCard(candidate)),
      );
      fill(
        status,
        candidates.length === 0 ? 'No candidate waits for review.' : `${candidates.length} pending, newest first · `,
        h('button', { type: 'button', class: 'link', onclick: load }, 'Reload'),
      );
    } catch (error) {
      fill(status, h('span', { class: 'error' }, `Could not load the merge queue: ${error.message}`));
    }
  }
  void load();
  return () => {
    stopped = true;
  };
}

function nodeColumn(label, node, other) {
  const keys = [...new Set([...Object.keys(node.properties), ...Object.keys(other.properties)])].sort();
  return h(
    'div',
    { class: 'side' },
    h('h3', {}, label),
    h('p', { class: 'name' }, node.name),
    h('p', { class: 'muted' }, node.type, ' · ', h('a', { href: `#/graph/${node.id}` }, 'in the graph')),
    keys.length === 0
      ? h('p', { class: 'muted' }, 'No properties.')
      : h(
          'dl',
          { class: 'readable' },
          keys.map((key) => {
            const same = JSON.stringify(node.properties[key]) === JSON.stringify(other.properties[key]);
            return [h('dt', { class: same ? 'same' : 'differs' }, key), h('dd', {}, readable(node.properties[key]))];
          }),
        ),
  );
}

function candidateCard(candidate) {
  const notes = h('textarea', { rows: 2, placeholder: 'Notes (optional)', maxlength: 2000, 'aria-label': 'Notes' });
  const message = messageArea();
  const approve = h('button', { type: 'button', class: 'approve' }, 'Merge');
  const reject = h('button', { type: 'button', class: 'reject' }, 'Not the same person');
  const score = Math.round(candidate.confidence_score * 100);
  const element = h(
    'article',
    { class: 'card merge', 'data-candidate-id': candidate.id },
    h(
      'header',
      {},
      h('h2', {}, `${candidate.survivor_node.name} ↔ ${candidate.duplicate_node.name}`),
      h(
        'p',
        {},
        h('span', { class: 'score' }, `score ${score}%`),
        ' · ',
        candidate.match_reasons.map((reason) => h('span', { class: 'reason' }, REASONS[reason] || reason)),
        h('span', { class: 'muted' }, ' · proposed '),
        when(candidate.created_at),
      ),
    ),
    h(
      'div',
      { class: 'pair' },
      nodeColumn('Survivor (stays)', candidate.survivor_node, candidate.duplicate_node),
      nodeColumn('Duplicate (merged away)', candidate.duplicate_node, candidate.survivor_node),
    ),
    notes,
    h('div', { class: 'actions' }, approve, reject),
    message.element,
  );

  async function decide(verb) {
    approve.disabled = reject.disabled = true;
    message.clear();
    const body = notes.value.trim() ? { notes: notes.value.trim() } : {};
    try {
      const answer = await api('POST', `/v1/ontology/merges/${candidate.id}/${verb}`, body);
      message.ok(
        verb === 'approve'
          ? `Merged: ${answer.merge?.edges_repointed ?? 0} edges moved to the survivor.`
          : 'Rejected: this pair will not be proposed again.',
      );
      element.classList.add('settled');
      notes.disabled = true;
    } catch (error) {
      message.error(
        error.status === 409
          ? `Already resolved elsewhere; nothing changed (409): ${error.message}`
          : `Could not ${verb} (${error.status || 'network error'}): ${error.message}`,
      );
      if (error.status !== 409) approve.disabled = reject.disabled = false;
    }
  }
  approve.addEventListener('click', () => decide('approve'));
  reject.addEventListener('click', () => decide('reject'));
  return element;
}
