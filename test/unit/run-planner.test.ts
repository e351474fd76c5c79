import { expect } from 'chai';
import { planLocally } from '../../src/runs/planner';

describe('the llm agent’s local planner', () => {
  it('plans from the goal’s words', () => {
    expect(planLocally('What is my credit balance', [])).to.deep.equal({
      kind: 'tool',
      tool: 'billing.credits_balance',
      input: {},
    });
    expect(planLocally('find the billing module', [])).to.deep.include({ tool: 'ontology.search' });
    expect(planLocally('Search for invoices', [])).to.deep.equal({
      kind: 'tool',
      tool: 'ontology.search',
      input: { query: 'invoices' },
    });
    expect(planLocally('who wrote the parser?', [])).to.deep.include({ tool: 'ontology.ask' });
    expect(planLocally('make coffee', [])).to.include({ kind: 'final' });
  });

  it('answers once a tool has answered', () => {
    const move = planLocally('balance', [
      { tool: 'billing.credits_balance', status: 'SUCCEEDED', output: {}, error: null },
    ]);
    expect(move).to.deep.equal({ kind: 'final', answer: 'billing.credits_balance answered: {}' });
  });
});

describe('the local planner and the graph tools (issue 40 item 6)', () => {
  const id = '8d1e4f2a-0b6c-4e3d-a5f7-2c9b1e0d7a64';
  it('remembers, forgets and reads nodes from the goal’s words', () => {
    expect(planLocally('Remember that Ada Lovelace works at Analytical Engines Ltd.', [])).to.deep.equal({
      kind: 'tool',
      tool: 'ontology.remember',
      input: { text: 'Ada Lovelace works at Analytical Engines Ltd.' },
    });
    expect(planLocally('note: the parser is slow', [])).to.deep.include({
      tool: 'ontology.remember',
      input: { text: 'the parser is slow' },
    });
    expect(planLocally(`forget node ${id.toUpperCase()}`, [])).to.deep.include({
      tool: 'ontology.forget',
      input: { node_id: id },
    });
    expect(planLocally(`please forget the edge ${id}`, [])).to.deep.include({ input: { edge_id: id } });
    expect(planLocally(`What is in the neighbourhood of ${id}?`, [])).to.deep.include({
      tool: 'ontology.neighborhood',
      input: { node_id: id },
    });
    expect(planLocally(`show node ${id}`, [])).to.deep.include({ tool: 'ontology.get_node', input: { node_id: id } });
    // Without an id, a node question is still a question.
    expect(planLocally('what node holds the parser?', [])).to.deep.include({ tool: 'ontology.ask' });
  });
});
