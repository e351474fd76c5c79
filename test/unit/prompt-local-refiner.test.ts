import { expect } from 'chai';
import { REFINED_GRAPH_LIMITS, RefinedGraph } from '../../src/prompt/model/contract';
import { findEmail, refineLocally } from '../../src/prompt/model/local';
import { PROMPT_MAX_CHARS } from '../../src/prompt/schemas';

const elapsedMs = (work: () => unknown) => {
  const started = performance.now();
  work();
  return performance.now() - started;
};

describe('the local refiner holds to the RefinedGraph schema (unit)', () => {
  it('finds e-mail addresses in time linear in the text: 20,000 characters in well under 50 ms', () => {
    expect(findEmail('reach her at grace@navy.example.')).to.equal('grace@navy.example');
    expect(findEmail('no address here')).to.equal(undefined);
    // Each of these took 0.3–2.8 s with the old pattern, which retried every start position.
    for (const text of ['a'.repeat(PROMPT_MAX_CHARS), 'a.'.repeat(10_000), `a@a${'.a-'.repeat(6000)}`]) {
      findEmail(text); // warm the pattern up once
      expect(
        elapsedMs(() => findEmail(text)),
        text.slice(0, 8),
      ).to.be.below(10);
    }
  });

  it('a 20,000-character capitalised run is no name: nothing longer than a name is extracted', () => {
    const graph = refineLocally(
      `${'Aaaa'.repeat(PROMPT_MAX_CHARS / 4 - 20)}. Ada Lovelace works at Analytical Engines Ltd.`,
    );
    expect(graph.nodes.map((node) => node.name)).to.deep.equal(['Ada Lovelace', 'Analytical Engines Ltd']);
    const shouting = refineLocally(`${'WORD '.repeat(4000)}works at Acme Ltd.`);
    for (const node of shouting.nodes) expect(node.name.length).to.be.at.most(120);
  });

  it('a prompt naming thousands of things gives a bounded graph that parses with RefinedGraph', () => {
    let prompt = '';
    for (let i = 0; prompt.length < PROMPT_MAX_CHARS - 60; i += 1)
      prompt += `Person${i} Smith joined Company${i} Ltd. `;
    const graph = refineLocally(prompt);
    expect(graph.nodes).to.have.length(REFINED_GRAPH_LIMITS.nodes);
    expect(graph.edges.length).to.be.at.most(REFINED_GRAPH_LIMITS.edges);
    const refs = new Set(graph.nodes.map((node) => node.ref));
    for (const edge of graph.edges) expect(refs.has(edge.source_ref) && refs.has(edge.target_ref)).to.equal(true);
    expect(RefinedGraph.safeParse(graph).success).to.equal(true);
    expect(elapsedMs(() => refineLocally(prompt))).to.be.below(500);
  });

  it('clips a long property value and caps how many properties a node collects', () => {
    const lines = ['Ada Lovelace wrote notes.', `notes: ${'x'.repeat(5000)}`];
    for (let i = 0; i < 100; i += 1) lines.push(`k${i}: v`);
    const [ada] = refineLocally(lines.join('\n')).nodes;
    expect(String(ada?.properties.notes)).to.have.length(REFINED_GRAPH_LIMITS.textChars);
    expect(Object.keys(ada?.properties ?? {})).to.have.length(64);
  });
});
