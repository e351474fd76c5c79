import { api, query } from './api.js';
import cytoscape from './cytoscape.mjs';
import { fill, h, readable, when } from './dom.js';

const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f'];

/**
 * Each type in the drawing gets its own colour: types sorted by name take the palette in order, so
 * the legend and the nodes agree and no two types of one drawing share a colour (up to nine types).
 */
const coloursOf = (types) => new Map([...new Set(types)].sort().map((type, i) => [type, i % PALETTE.length]));

/**
 * Name search with typeahead, then the node's neighbourhood drawn with Cytoscape.js: colour by type,
 * size by importance; a click re-centres on the node and shows its properties beside the graph.
 */
export function graphView(main, nodeId) {
  const search = h('input', {
    id: 'graph-search',
    type: 'search',
    placeholder: 'Find a node by name…',
    autocomplete: 'off',
    'aria-label': 'Find a node',
  });
  const suggestions = h('ul', { class: 'suggestions', id: 'graph-suggestions', role: 'listbox' });
  const status = h('p', { class: 'muted', id: 'graph-status' }, 'Search a node to draw its neighbourhood.');
  const canvas = h('div', { class: 'graph-canvas', id: 'graph-canvas' });
  const panel = h(
    'aside',
    { class: 'graph-panel', id: 'graph-panel' },
    h('p', { class: 'muted' }, 'No node selected.'),
  );
  const legend = h('p', { class: 'legend' });
  fill(
    main,
    h('h1', {}, 'Graph explorer'),
    h('div', { class: 'typeahead' }, search, suggestions),
    status,
    legend,
    h('div', { class: 'graph' }, canvas, panel),
  );

  const cy = cytoscape({
    container: canvas,
    style: [
      {
        selector: 'node',
        style: {
          label: 'data(name)',
          'background-color': 'data(colour)',
          width: 'data(size)',
          height: 'data(size)',
          'font-size': 10,
          'text-valign': 'bottom',
          'text-margin-y': 3,
        },
      },
      { selector: 'node.centre', style: { 'border-width': 3, 'border-color': '#222' } },
      {
        selector: 'edge',
        style: {
          label: 'data(type)',
          'font-size': 8,
          width: 1.5,
          'line-color': '#bbb',
          'target-arrow-color': '#bbb',
          'target-arrow-shape': 'triangle',
          'curve-style': 'bezier',
          'text-rotation': 'autorotate',
          color: '#777',
        },
      },
    ],
  });
  // For the browser tests and for anyone poking at the page from the devtools console.
  window.__cy = cy;
  cy.on('tap', 'node', (event) => {
    location.hash = `#/graph/${event.target.id()}`;
  });

  let typing;
  let stopped = false;
  search.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(suggest, 200);
  });

  async function suggest() {
    const q = search.value.trim();
    if (!q) return fill(suggestions);
    try {
      const nodes = await api('GET', `/v1/ontology/nodes/typeahead${query({ q, limit: 8 })}`);
      if (stopped || q !== search.value.trim()) return;
      fill(
        suggestions,
        nodes.length === 0
          ? h('li', { class: 'muted' }, 'No node matches.')
          : nodes.map((node) =>
              h(
                'li',
                {},
                h(
                  'button',
                  {
                    type: 'button',
                    role: 'option',
                    onclick: () => {
                      fill(suggestions);
                      search.value = node.name;
                      location.hash = `#/graph/${node.id}`;
                    },
                  },
                  node.name,
                  h('span', { class: 'muted' }, ` ${node.type}`),
                ),
              ),
            ),
      );
    } catch (error) {
      fill(suggestions, h('li', { class: 'error' }, error.message));
    }
  }

  async function draw(centreId) {
    fill(status, 'Loading the neighbourhood…');
    try {
      const [graph, node] = await Promise.all([
        api('GET', `/v1/ontology/graph_neighborhood${query({ node_id: centreId, hops: 2, node_limit: 100 })}`),
        api('GET', `/v1/ontology/nodes/${centreId}`),
      ]);
      if (stopped) return;
      const ids = new Set(graph.nodes.map((item) => item.id));
      const colours = coloursOf(graph.nodes.map((item) => item.type));
      cy.elements().remove();
      cy.add([
        ...graph.nodes.map((item) => ({
          group: 'nodes',
          data: {
            id: item.id,
            name: item.name,
            type: item.type,
            colour: PALETTE[colours.get(item.type)],
            size: Math.round(18 + 42 * Math.max(0, Math.min(1, item.importance_score))),
          },
          classes: item.id === centreId ? 'centre' : '',
        })),
        ...graph.edges
          .filter((edge) => ids.has(edge.source_node_id) && ids.has(edge.target_node_id))
          .map((edge) => ({
            group: 'edges',
            data: { id: edge.id, source: edge.source_node_id, target: edge.target_node_id, type: edge.type },
          })),
      ]);
      // Rings by hops from the centre: the centre in the middle, its neighbours around it, and so on.
      cy.layout({ name: 'breadthfirst', roots: [centreId], circle: true, spacingFactor: 1.1, animate: false }).run();
      cy.fit(undefined, 30);
      canvas.dataset.nodeCount = String(cy.nodes().length);
      canvas.dataset.centre = centreId;
      const truncated = graph.truncated.nodes || graph.truncated.edges ? ' (truncated)' : '';
      fill(
        status,
        `${graph.nodes.length} nodes, ${graph.edges.length} edges within 2 hops of ${node.name}${truncated}`,
      );
      fill(
        legend,
        [...colours].map(([type, index]) => h('span', { class: `swatch swatch-${index}` }, type)),
      );
      fill(panel, nodePanel(node));
    } catch (error) {
      if (!stopped) fill(status, h('span', { class: 'error' }, `Could not draw the neighbourhood: ${error.message}`));
    }
  }

  if (nodeId) void draw(nodeId);
  else search.focus();
  return () => {
    stopped = true;
    clearTimeout(typing);
    cy.destroy();
  };
}

function nodePanel(node) {
  return [
    h('h2', {}, node.name),
    h('p', { class: 'muted' }, node.type),
    h(
      'dl',
      { class: 'readable' },
      h('dt', {}, 'importance'),
      h('dd', {}, node.importance_score.toFixed(3)),
      h('dt', {}, 'references'),
      h('dd', {}, node.reference_count),
      h('dt', {}, 'updated'),
      h('dd', {}, when(node.updated_at)),
    ),
    h('h3', {}, 'Properties'),
    readable(node.properties),
  ];
}
