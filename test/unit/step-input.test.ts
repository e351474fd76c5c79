import { expect } from 'chai';
import { fromIssues, fromRefs, inFromValue, stepTemplate, takesValues } from '../../src/runs/step-input';

describe('a playbook step’s $from values (issue 40 item 5)', () => {
  it('finds them at any depth, in document order, without looking inside one', () => {
    const input = { a: { $from: 'input.x' }, b: [1, { c: { $from: 'steps[0].output' } }], d: 'plain' };
    expect(fromRefs(input).map((ref) => ref.path)).to.deep.equal([['a'], ['b', 1, 'c']]);
    expect(fromRefs({ $from: 'input', nested: { $from: 'x' } }).map((ref) => ref.path)).to.deep.equal([[]]);
    expect(fromRefs({ plain: [1, 'two', null] })).to.deep.equal([]);
  });

  it('checks each one compiles, and its shape, naming the field', () => {
    const loc = ['body', 'input', 'steps', 2];
    expect(fromIssues({ a: { $from: 'steps[0].output.id' } }, loc)).to.deep.equal([]);
    const [syntax] = fromIssues({ a: { b: { $from: 'steps[0].[' } } }, loc);
    expect(syntax).to.deep.include({ loc: [...loc, 'input', 'a', 'b', '$from'], type: 'jmespath' });
    expect(fromIssues({ a: { $from: 5 } }, loc)[0]!.type).to.equal('from_value');
    expect(fromIssues({ a: { $from: 'x', also: 1 } }, loc)[0]!.type).to.equal('from_value');
    // A fan-out beyond the filters' bound is refused as a trigger filter's is.
    const wide = `input${'.[@,@,@,@]'.repeat(6)}`;
    expect(fromIssues({ a: { $from: wide } }, loc)[0]!.type).to.equal('jmespath');
  });

  it('excuses a schema issue at or under a $from value, or a union that failed only there', () => {
    const refs = fromRefs({ node_id: { $from: 'x' } });
    expect(inFromValue(refs, { code: 'invalid_type', path: ['node_id'] })).to.equal(true);
    expect(inFromValue(refs, { code: 'invalid_type', path: ['name'] })).to.equal(false);
    const union = {
      code: 'invalid_union',
      path: [],
      errors: [[{ code: 'invalid_type', path: ['node_id'] }], [{ code: 'invalid_type', path: ['edge_id'] }]],
    };
    expect(inFromValue(refs, union)).to.equal(true);
  });

  it('reads a playbook step’s input as dispatched; an llm run has none', () => {
    const run = { agent: 'playbook' as const, input: { steps: [{ tool: 't', input: { a: { $from: 'input' } } }] } };
    expect(stepTemplate(run, 0)).to.deep.equal({ a: { $from: 'input' } });
    expect(takesValues(run, 0)).to.equal(true);
    expect(takesValues(run, 1)).to.equal(false);
    expect(takesValues({ agent: 'llm', input: { goal: 'x' } }, 0)).to.equal(false);
  });
});
