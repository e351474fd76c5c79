import { expect } from 'chai';
import type { ContextNode } from '../../src/prompt/model/contract';
import { edgeSentence, propertySentences, relationWords, statedFacts } from '../../src/prompt/model/facts';
import { answerLocally } from '../../src/prompt/model/local';

const ada: ContextNode = {
  id: 'a',
  type: 'person',
  name: 'Ada Lovelace',
  properties: { email: 'ada@example.org', notes: 'line one\nline two', _internal: 'x', born: 1815 },
  score: 1,
};
const engines: ContextNode = {
  id: 'e',
  type: 'organization',
  name: 'Analytical Engines Ltd',
  properties: {},
  score: 0,
  neighbour: true,
};
const babbage: ContextNode = {
  id: 'b',
  type: 'person',
  name: 'Charles Babbage',
  properties: {},
  score: 0,
  neighbour: true,
};
const loom: ContextNode = { id: 'l', type: 'concept', name: 'Jacquard Loom', properties: {}, score: 0.2 };

describe('local answers: the facts the graph holds, in sentences (unit)', () => {
  it('reads an edge type as words and ends a sentence with one stop', () => {
    expect(relationWords('WORKS_AT')).to.equal('works at');
    expect(relationWords('reportsTo')).to.equal('reports to');
    expect(edgeSentence(ada, 'WORKS_AT', engines)).to.equal('Ada Lovelace works at Analytical Engines Ltd.');
    expect(edgeSentence(ada, 'WORKS_AT', { name: 'Acme Inc.' })).to.equal('Ada Lovelace works at Acme Inc.');
  });

  it('states short one-line properties, in key order, never internal or multi-line ones', () => {
    expect(propertySentences(ada)).to.deep.equal([
      "Ada Lovelace's born is 1815.",
      "Ada Lovelace's email is ada@example.org.",
    ]);
  });

  it('"Who is Ada Lovelace?" states her employer and mentor, citing exactly the nodes it names', () => {
    const context = {
      nodes: [ada, loom, engines, babbage],
      edges: [
        { type: 'WORKS_AT', source_node_id: 'a', target_node_id: 'e' },
        { type: 'MENTORED', source_node_id: 'b', target_node_id: 'a' },
        // Not about a cited node: left out, and its ends are not cited for it.
        { type: 'INSPIRED', source_node_id: 'l', target_node_id: 'b' },
      ],
    };
    const answer = answerLocally('Who is Ada Lovelace?', context);
    expect(answer.answer).to.equal(
      'From the graph: Ada Lovelace (person). Ada Lovelace works at Analytical Engines Ltd. ' +
        "Charles Babbage mentored Ada Lovelace. Ada Lovelace's born is 1815. Ada Lovelace's email is ada@example.org.",
    );
    expect(answer.citations).to.have.members(['a', 'e', 'b']);
    // Deterministic whatever order the edges came in.
    const reversed = answerLocally('Who is Ada Lovelace?', { ...context, edges: [...context.edges].reverse() });
    expect(reversed).to.deep.equal(answer);
  });

  it('without a name match cites the retrieved nodes, not the neighbours, and states each fact once', () => {
    const { sentences, named } = statedFacts([ada, engines], {
      nodes: [ada, engines],
      edges: [
        { type: 'WORKS_AT', source_node_id: 'a', target_node_id: 'e' },
        { type: 'WORKS_AT', source_node_id: 'a', target_node_id: 'e' },
      ],
    });
    expect(sentences.filter((text) => text.includes('works at'))).to.have.length(1);
    expect(named).to.have.members(['a', 'e']);
    const answer = answerLocally('Anything new?', { nodes: [loom, engines], edges: [] });
    expect(answer).to.deep.equal({ answer: 'From the graph: Jacquard Loom (concept).', citations: ['l'] });
  });
});
