import { expect } from 'chai';
import { classifyChange, retentionHorizon } from '../../src/graph/versions-service';

describe('graph versions: how a diff classifies an entity (issue 31)', () => {
  const node = { type: 'person', name: 'Ada', properties: { a: 1 }, is_deleted: false };

  it('added, removed, changed with the differing versioned fields, or nothing', () => {
    expect(classifyChange('node', null, node)?.change).to.equal('added');
    expect(classifyChange('node', { ...node, is_deleted: true }, node)?.change).to.equal('added');
    expect(classifyChange('node', node, { ...node, is_deleted: true })?.change).to.equal('removed');
    expect(classifyChange('node', node, null)?.change).to.equal('removed');
    expect(classifyChange('node', node, { ...node, name: 'Ada L', properties: { a: 2 } })).to.deep.equal({
      change: 'changed',
      changed_fields: ['name', 'properties'],
    });
    // Unversioned fields (importance) do not make a change; neither does a round trip.
    expect(classifyChange('node', { ...node, importance_score: 0.1 }, { ...node, importance_score: 0.9 })).to.equal(
      null,
    );
    expect(classifyChange('node', null, { ...node, is_deleted: true })).to.equal(null);
    expect(
      classifyChange('edge', { valid_to: null, is_deleted: false }, { valid_to: 'x', is_deleted: false }),
    ).to.deep.equal({ change: 'changed', changed_fields: ['valid_to'] });
  });

  it('the retention horizon is the given days before now', () => {
    const now = Date.parse('2026-11-28T00:00:00Z');
    expect(retentionHorizon(90, now).toISOString()).to.equal('2026-08-30T00:00:00.000Z');
  });
});
