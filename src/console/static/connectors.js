import { api } from './api.js';
import { badge, fill, h, when } from './dom.js';

/** What a connector's credentials show: the type, and for a secret its last 4 characters. */
const authOf = (auth) => (auth.last4 ? `${auth.type} …${auth.last4}` : auth.type);

/**
 * Connectors (GET /v1/connectors, GET /v1/connectors/{id}): each remote MCP server or HTTP API with
 * its tools, whether each is read-only (a run asks a person before any other), and its limits.
 * Secrets never reach the page; the API answers only their type and last 4 characters.
 */
export function connectorsView(main) {
  const list = h('div', { class: 'connectors' });
  const status = h('p', { class: 'muted' });
  fill(
    main,
    h('h1', {}, 'Connectors'),
    h('p', { class: 'muted' }, 'Remote tools of this workspace, called as <connector>.<tool> (docs/connectors.md).'),
    status,
    list,
  );
  let stopped = false;

  const card = (connector) =>
    h(
      'section',
      { class: 'connector card', 'data-connector-id': connector.id },
      h('h2', {}, connector.name, ' ', h('span', { class: 'muted' }, `${connector.kind} · ${connector.url}`)),
      h(
        'p',
        { class: 'muted' },
        `auth ${authOf(connector.auth)} · timeout ${connector.timeout_seconds} s · `,
        `${connector.credits_per_call} credit(s) a call · version ${connector.version} · refreshed `,
        when(connector.refreshed_at),
      ),
      h(
        'table',
        { class: 'tools' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Tool', 'Remote name', 'Kind', 'Description'].map((title) => h('th', {}, title)),
          ),
        ),
        h(
          'tbody',
          {},
          connector.tools.map((tool) =>
            h(
              'tr',
              { 'data-tool': tool.name },
              h('td', {}, tool.name),
              h('td', {}, tool.remote_name),
              h('td', { class: 'kind' }, badge(tool.read_only ? 'READ' : 'WRITE')),
              h('td', {}, tool.description),
            ),
          ),
        ),
      ),
    );

  async function load() {
    try {
      const page = await api('GET', '/v1/connectors');
      const details = await Promise.all(page.connectors.map((row) => api('GET', `/v1/connectors/${row.id}`)));
      if (stopped) return;
      fill(list, details.map(card));
      fill(status, details.length === 0 ? 'No connectors.' : '');
    } catch (error) {
      if (!stopped) fill(status, h('span', { class: 'error' }, `Could not load connectors: ${error.message}`));
    }
  }
  void load();
  return () => {
    stopped = true;
  };
}
