import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { expect } from 'chai';

const ROOT = resolve(__dirname, '../..');
const PLATFORM = join(ROOT, 'src/platform');
const RULES = join(ROOT, 'src/rules');
const APP = join(ROOT, 'src/app');
/** Entry points under src/ that, like main.ts, workers/ and bench/, stand on the composition wing. */
const ENTRY_POINTS = ['src/cli/main.ts', 'src/client/generate.ts'].map((file) => join(ROOT, file));

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

// Every module specifier: `import … from`, `import type … from`, `export … from`, side-effect
// imports, `import()` and `require()`.
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"]([^'"]+)['"]/g;

function relativeImports(source: string): string[] {
  const withoutComments = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  return [...withoutComments.matchAll(SPECIFIER)].map((match) => match[1] ?? '').filter((spec) => spec.startsWith('.'));
}

/** `file → specifier` for every relative import under `dir` that resolves outside `allowed`. */
function importsLeaving(dir: string, allowed: string[]): string[] {
  return tsFiles(dir).flatMap((file) =>
    relativeImports(readFileSync(file, 'utf8'))
      .filter((spec) => {
        const target = resolve(dirname(file), spec);
        return !allowed.some((root) => target === root || target.startsWith(`${root}/`));
      })
      .map((spec) => `${relative(ROOT, file)} → ${spec}`),
  );
}

/**
 * The feature floor's plan: every feature → feature import allowed under src/ (type imports
 * included), each with its reason, in one place. The plan is a DAG; an import it does not list
 * fails, and so does an edge nothing uses any more (the plan stays true).
 */
const FEATURE_PLAN: Record<string, Record<string, string>> = {
  'ag-ui': {
    runs: 'a RunAgentInput dispatches an llm run, and its event log is streamed in AG-UI’s words',
    approvals: 'a resume entry resolves the run’s pending approval as POST /v1/approvals/{id}/resolve does',
  },
  a2a: {
    runs: 'an A2A task is a run: dispatched, read, cancelled and followed through the run service and its event log',
    approvals: 'a reply to an input-required task resolves the run’s pending approval',
    oauth: 'the Agent Card names the OAuth endpoints that issue tokens for /a2a',
    'run-callbacks': 'push notification configs are the run’s own callbacks',
    triggers: 'POST /a2a reads its raw body with the intake’s bounded reader (bad JSON is a JSON-RPC error)',
  },
  agents: {
    capabilities: 'agents declares its tools (sessions, claims, findings) with defineCapability',
    'change-sets': 'a finding an agent records stages a change-set where the workspace stages agents’ writes',
    graph: 'findings write nodes; agents registers the claim guard on CONTAINS edges (graph/edge-guards)',
    'ontology-config': 'the workspace’s staging setting decides whether a finding writes or stages',
  },
  approvals: {
    'api-keys': 'separation of duties by person follows a key’s minting lineage',
    filters: 'approval rules match a step’s input with the JMESPath filter pool',
  },
  capabilities: {
    'change-sets': 'graph write tools stage one change-set per call under agent staging',
    code: 'ontology.symbol_context answers through the code graph’s service',
    credits: 'every priced tool charges before and refunds on failure',
    graph: 'the graph tools (get_node, find_nodes, neighborhood, write_node, link, forget, history)',
    'ontology-config': 'graph write tools read the workspace’s staging setting',
    prompt: 'ontology.ask and ontology.remember run the prompt pipeline',
    search: 'ontology.search',
  },
  connectors: {
    capabilities: 'a connector’s remote tools are capabilities of its workspace',
    credits: 'a connector’s write tool charges before its call and refunds on failure',
    'run-callbacks': 'connectors reach out through the run callbacks’ address guard',
  },
  'change-sets': {
    approvals: 'a staged set is an approval subject (the port, its outcome schemas)',
    graph: 'applying a set writes nodes and edges through the graph’s writes',
    'ontology-config': 'applying reads the workspace’s importance and type settings',
  },
  cli: {
    code: '`weft index` builds code-graph batches with the code feature’s keys and schemas',
    triggers: '`weft triggers send` signs with the intake’s own schemes',
  },
  code: {
    credits: 'ingest and symbol-context are priced',
    embeddings: 'code nodes are embedded by the embeddings outbox handler',
    graph: 'code symbols are graph nodes and edges',
    importance: 'a symbol’s salience ranks symbol-context',
    'ontology-config': 'the workspace’s search weights and importance settings',
    search: 'symbol-context finds symbols with the search repository',
    'type-catalog': 'code node and edge types are registered in the catalog',
  },
  communities: {
    credits: 'a forced refresh is charged',
  },
  credits: {
    tenancy: 'a workspace’s balance lives on its tenant row',
  },
  embeddings: {
    credits: 'embedding a node is charged to the workspace',
    graph: 'node events trigger embeddings',
    tenancy: 'the embedding queue is per tenant',
  },
  graph: {
    importance: 'a node’s importance is computed as it is written',
    'ontology-config': 'writes honour the workspace’s ontology settings',
    tenancy: 'an edge’s endpoints must belong to the workspace’s tenant',
    'type-catalog': 'writes validate types against the catalog',
  },
  importance: {
    'ontology-config': 'the importance formula reads the workspace’s weights',
  },
  mcp: {
    capabilities: 'every capability is an MCP tool',
    graph: 'weft://nodes/{id} resources read nodes',
    runs: 'an MCP task is a run: tasks/get, tasks/list and tasks/cancel read and cancel it',
  },
  'mcp-tokens': {
    'api-keys': 'an MCP token is a credential row with the keys’ schemas',
  },
  merges: {
    credits: 'merge decisions are priced',
    graph: 'a merge rewrites nodes and edges',
    importance: 'the kept node’s importance is recomputed',
    'ontology-config': 'resolution thresholds come from the workspace’s settings',
    tenancy: 'people candidates are found per tenant',
  },
  oauth: {
    'api-keys': 'an OAuth access token is a credential row',
  },
  prompt: {
    'change-sets': 'a staged prompt writes a change-set instead of the graph',
    communities: 'global questions are answered from community summaries',
    credits: 'prompts are charged before and refunded on failure',
    graph: 'extraction writes and retrieval reads the graph',
    'ontology-config': 'retrieval and writes honour the workspace’s settings',
    search: 'retrieval ranks candidates with the search repository and scoring',
    tenancy: 'the prompt reconciler sweeps tenants',
  },
  'run-schedules': {
    credits: 'a fire the balance cannot pay is skipped with the shortfall as its reason',
    runs: 'a schedule’s fire dispatches a run from its template',
  },
  runs: {
    approvals: 'a run’s step is an approval subject; runs request, audit and expire its approvals',
    capabilities: 'a step invokes a capability',
    credits: 'a dispatch is admitted only when the balance pays its priced steps',
    filters: 'the approval rules’ input filters, judged before a step runs',
    'run-callbacks': 'a dispatch’s callbacks and the run.finished notification',
    tenancy: 'the reconciler sweeps workspaces',
  },
  search: {
    credits: 'searches are priced',
    graph: 'search reads nodes and their neighbours',
    'ontology-config': 'the workspace’s search weights',
  },
  tenancy: {
    'api-keys': 'provisioning a tenant mints its bootstrap key',
  },
  triggers: {
    credits: 'a delivery whose run the balance cannot pay records the shortfall as its reason',
    filters: 'a trigger’s filter decides whether a delivery dispatches',
    runs: 'a matching delivery dispatches a run from the trigger’s template',
  },
};

const SRC = join(ROOT, 'src');
/** Not features: the ground floor and the composition wing, held by the tests above. */
const NOT_FEATURES = new Set(['platform', 'rules', 'app']);

function featureOf(path: string): string | undefined {
  const rel = relative(SRC, path);
  if (rel.startsWith('..')) return undefined;
  const top = rel.split('/')[0];
  return top && !NOT_FEATURES.has(top) && top !== rel ? top : undefined;
}

/** `from → to` feature pairs found in the sources, with one file each as the witness. */
function featureImports(): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of tsFiles(SRC)) {
    const from = featureOf(file);
    if (!from || ENTRY_POINTS.includes(file)) continue;
    for (const spec of relativeImports(readFileSync(file, 'utf8'))) {
      const to = featureOf(resolve(dirname(file), spec));
      if (to && to !== from && !found.has(`${from} → ${to}`)) found.set(`${from} → ${to}`, relative(ROOT, file));
    }
  }
  return found;
}

/** A cycle in the plan, as a path `a → b → … → a`, or undefined when it is a DAG. */
function cycleIn(plan: Record<string, Record<string, string>>): string | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string | undefined => {
    if (state.get(node) === 'done') return undefined;
    if (state.get(node) === 'open') return [...path.slice(path.indexOf(node)), node].join(' → ');
    state.set(node, 'open');
    path.push(node);
    for (const next of Object.keys(plan[node] ?? {})) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of Object.keys(plan)) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}

describe('layering (unit)', () => {
  it('finds the specifiers of every import form', () => {
    const source = [
      "import type { A } from '../a';",
      "import { B,\n  C } from './b';",
      "export { D } from '../../d';",
      "import './side-effect';",
      "const e = await import('../e');",
      "// import { F } from '../f';",
      "import { z } from 'zod';",
    ].join('\n');
    expect(relativeImports(source)).to.deep.equal(['../a', './b', '../../d', './side-effect', '../e']);
  });

  it('src/platform/ imports nothing outside src/platform/ and src/rules/ (type imports included)', () => {
    expect(importsLeaving(PLATFORM, [PLATFORM, RULES])).to.deep.equal([]);
  });

  it('only entry points import src/app/, the composition wing (features describe themselves without it)', () => {
    const below = tsFiles(join(ROOT, 'src')).filter(
      (file) => !file.startsWith(`${APP}/`) && !ENTRY_POINTS.includes(file),
    );
    const violations = below.flatMap((file) =>
      relativeImports(readFileSync(file, 'utf8'))
        .filter((spec) => {
          const target = resolve(dirname(file), spec);
          return target === APP || target.startsWith(`${APP}/`);
        })
        .map((spec) => `${relative(ROOT, file)} → ${spec}`),
    );
    expect(violations).to.deep.equal([]);
  });

  it('src/rules/ (the limits and the prices) imports nothing outside itself', () => {
    expect(importsLeaving(RULES, [RULES])).to.deep.equal([]);
  });
});

describe('the feature floor (unit)', () => {
  it('finds a cycle in a plan, and none in a DAG', () => {
    expect(cycleIn({ a: { b: '' }, b: { c: '' }, c: { a: '' } })).to.equal('a → b → c → a');
    expect(cycleIn({ a: { b: '', c: '' }, b: { c: '' }, c: {} })).to.equal(undefined);
  });

  it('the plan is a DAG, and every edge says why', () => {
    expect(cycleIn(FEATURE_PLAN)).to.equal(undefined);
    const unexplained = Object.entries(FEATURE_PLAN).flatMap(([from, edges]) =>
      Object.entries(edges)
        .filter(([, reason]) => reason.trim().length < 10)
        .map(([to]) => `${from} → ${to}`),
    );
    expect(unexplained).to.deep.equal([]);
  });

  it('every feature → feature import is an edge of the plan (type imports included)', () => {
    const outside = [...featureImports()]
      .filter(([edge]) => {
        const [from, to] = edge.split(' → ') as [string, string];
        return !FEATURE_PLAN[from]?.[to];
      })
      .map(([edge, witness]) => `${edge} (${witness})`);
    expect(outside).to.deep.equal([]);
  });

  it('every edge of the plan is still used, so the plan says what is true', () => {
    const used = featureImports();
    const stale = Object.entries(FEATURE_PLAN).flatMap(([from, edges]) =>
      Object.keys(edges)
        .map((to) => `${from} → ${to}`)
        .filter((edge) => !used.has(edge)),
    );
    expect(stale).to.deep.equal([]);
  });
});
