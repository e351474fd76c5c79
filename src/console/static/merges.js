import { api, query } from './api.js';
import { fill, h, messageArea, readable, shortId, when } from './dom.js';

const REASONS = {
  email_match: 'same email',
  normalized_name_match: 'same name (normalised)',
};

/**
 * Pending merge candidates, the two people side by side, with approve / reject and notes; below
 * them the applied merges, latest first, each with an Undo.
 */
export function mergesView(main) {
  const status = h('p', { class: 'muted' });
  const list = h('div', { class: 'cards', id: 'merges' });
  const appliedStatus = h('p', { class: 'muted' });
  const applied = h('div', { class: 'cards', id: 'applied-merges' });
  fill(
    main,
    h('h1', {}, 'Merge queue'),
    status,
    list,
    h('h2', { class: 'section' }, 'Applied merges'),
    appliedStatus,
    applied,
  );
  let stopped = false;

  async function load() {
    fill(status, 'Loading…');
    fill(appliedStatus, 'Loading…');
    try {
      const [candidates, merged] = await Promise.all([
        api('GET', `/v1/ontology/merges${query({ limit: 50 })}`),
        api('GET', `/v1/ontology/merges${query({ status: 'applied', limit: 50 })}`),
      ]);
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
      fill(
        applied,
        merged.map((candidate) => appliedCard(candidate)),
      );
      fill(
        appliedStatus,
        merged.length === 0
          ? 'No applied merge to undo.'
          : `${merged.length} applied, latest first. Undo restores the merged-away person and the edges the merge moved.`,
      );
    } catch (error) {
      fill(status, h('span', { class: 'error' }, `Could not load the merge queue: ${error.message}`));
      fill(appliedStatus, '');
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

/** An applied merge (a reviewer's or the resolver's own): who was merged into whom, and Undo. */
function appliedCard(candidate) {
  const notes = h('textarea', { rows: 2, placeholder: 'Why undo (optional)', maxlength: 2000, 'aria-label': 'Notes' });
  const message = messageArea();
  const undo = h('button', { type: 'button', class: 'undo' }, 'Undo merge');
  const details = h('div', { class: 'unmerge-result' });
  const element = h(
    'article',
    { class: 'card merge applied', 'data-candidate-id': candidate.id },
    h(
      'header',
      {},
      h('h2', {}, `${candidate.duplicate_node.name} → ${candidate.survivor_node.name}`),
      h(
        'p',
        {},
        h('span', { class: 'score' }, `score ${Math.round(candidate.confidence_score * 100)}%`),
        h('span', { class: 'muted' }, ' · merged '),
        when(candidate.resolved_at),
        ' · ',
        h('a', { href: `#/graph/${candidate.survivor_node_id}` }, 'survivor in the graph'),
      ),
    ),
    notes,
    h('div', { class: 'actions' }, undo),
    message.element,
    details,
  );

  undo.addEventListener('click', async () => {
    undo.disabled = true;
    message.clear();
    const body = notes.value.trim() ? { notes: notes.value.trim() } : {};
    try {
      const answer = await api('POST', `/v1/ontology/merges/${candidate.id}/unmerge`, body);
      const result = answer.unmerge;
      message.ok(
        `Undone: ${result.restored.name} is back, ${result.edges_restored.length} edges moved back to it, ` +
          `${result.edges_undeleted.length} removed edges restored.`,
      );
      fill(details, unmergeDetails(result));
      element.classList.add('settled');
      notes.disabled = true;
    } catch (error) {
      message.error(
        error.status === 409
          ? `Cannot undo (409): ${error.message}`
          : `Could not undo (${error.status || 'network error'}): ${error.message}`,
      );
      if (error.status !== 409) undo.disabled = false;
    }
  });
  return element;
}

/** What a reviewer still has to look at after an undo: edges left on the survivor, edits kept. */
function unmergeDetails(result) {
  const parts = [];
  if (result.edges_left_on_survivor.length > 0) {
    parts.push(
      h('h3', {}, 'Edges added to the survivor since the merge stay there; reassign them if they belong to the other'),
      h(
        'ul',
        { class: 'left-edges' },
        result.edges_left_on_survivor.map((edge) =>
          h(
            'li',
            { 'data-edge-id': edge.id },
            h('code', {}, edge.type),
            ' ',
            h('a', { href: `#/graph/${edge.source_node_id}` }, shortId(edge.source_node_id)),
            ' → ',
            h('a', { href: `#/graph/${edge.target_node_id}` }, shortId(edge.target_node_id)),
            h('span', { class: 'muted' }, ' · added '),
            when(edge.created_at),
          ),
        ),
      ),
    );
  }
  if (result.survivor_properties_kept.length > 0) {
    parts.push(
      h(
        'p',
        { class: 'muted' },
        `Edited since the merge, kept on the survivor: ${result.survivor_properties_kept.join(', ')}`,
      ),
    );
  }
  if (result.edges_not_restored.length > 0) {
    parts.push(
      h('p', { class: 'muted' }, `Not restored (changed since the merge): ${result.edges_not_restored.length} edges`),
    );
  }
  return parts;
}
