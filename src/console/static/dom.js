// DOM helpers. Text always goes in as text nodes (never innerHTML), so data from the API cannot
// become markup; and the CSP forbids inline scripts and styles anyway.

/** `h('div', {class: 'card', onclick: fn}, child, 'text', [more])`. */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
    else if (name === 'class') element.className = value;
    else if (value === true) element.setAttribute(name, '');
    else element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces an element's children. */
export const fill = (element, ...children) => {
  element.replaceChildren();
  append(element, children);
  return element;
};

/**
 * A value rendered readably: objects as key/value lists, arrays as numbered lists, long or
 * multi-line strings as blocks; deep values fall back to indented JSON.
 */
export function readable(value, depth = 0) {
  if (value === null || value === undefined) return h('span', { class: 'muted' }, 'none');
  if (typeof value !== 'object') {
    const text = String(value);
    return text.includes('\n') || text.length > 120 ? h('pre', { class: 'text' }, text) : h('span', {}, text);
  }
  if (depth > 3) return h('pre', { class: 'json' }, JSON.stringify(value, null, 2));
  if (Array.isArray(value)) {
    if (value.length === 0) return h('span', { class: 'muted' }, 'empty list');
    return h(
      'ol',
      { class: 'readable' },
      value.map((item) => h('li', {}, readable(item, depth + 1))),
    );
  }
  const entries = Object.entries(value);
  if (entries.length === 0) return h('span', { class: 'muted' }, 'nothing');
  return h(
    'dl',
    { class: 'readable' },
    entries.map(([key, item]) => [h('dt', {}, key), h('dd', {}, readable(item, depth + 1))]),
  );
}

export const shortId = (id) => (id ? id.slice(0, 8) : '');

export function when(iso) {
  if (!iso) return '';
  const date = new Date(iso);
  return h('time', { datetime: iso, title: iso }, date.toLocaleString());
}

export function duration(from, to) {
  if (!from || !to) return '';
  const ms = Date.parse(to) - Date.parse(from);
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** A status badge; its class colours it. */
export const badge = (status) => h('span', { class: `badge ${String(status).toLowerCase()}` }, status);

/** A message area for one card or form: ok or error text, replaced on each call. */
export function messageArea() {
  const element = h('p', { class: 'message', role: 'status', hidden: true });
  return {
    element,
    ok(text) {
      element.className = 'message ok';
      fill(element, text).hidden = false;
    },
    error(text) {
      element.className = 'message error';
      fill(element, text).hidden = false;
    },
    clear() {
      element.hidden = true;
    },
  };
}

/**
 * A resolved card stays to be read: marked settled, its notes frozen, and a Dismiss button that removes
 * it and `forget`s it (the approvals' list and the change-sets' share this end).
 */
export function settleCard(element, notes, forget) {
  element.classList.add('settled');
  notes.disabled = true;
  const dismiss = () => {
    element.remove();
    forget();
  };
  element.append(h('button', { type: 'button', class: 'dismiss', onclick: dismiss }, 'Dismiss'));
}
