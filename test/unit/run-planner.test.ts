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
