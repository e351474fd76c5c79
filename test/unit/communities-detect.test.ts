import { expect } from 'chai';
import type { Link, MemberNode } from '../../src/communities/detect';
import { detectCommunities, matchPrevious } from '../../src/communities/detect';

const group = (prefix: string, size: number): MemberNode[] =>
  Array.from({ length: size }, (_, i) => ({
    id: `${prefix}${i}`,
    name: `${prefix} ${i}`,
    type: 'thing',
    importance: i / 10,
  }));
const clique = (members: MemberNode[]): Link[] =>
  members.flatMap((a, i) => members.slice(i + 1).map((b) => ({ source: a.id, target: b.id })));

describe('community detection (pure)', () => {
  const a = group('a', 5);
  const b = group('b', 4);
  const nodes = [...a, ...b, { id: 'lone', name: 'lone', type: 'note', importance: 1 }];
  const links = [...clique(a), ...clique(b), { source: 'a0', target: 'b0' }, { source: 'a1', target: 'ghost' }];

  it('finds the two groups, drops singletons and links to unknown nodes, and is repeatable', () => {
    const first = detectCommunities(nodes, links, { minSize: 3 });
    expect(first.communities.map((c) => c.members.map((m) => m.id))).to.deep.equal([
      ['a4', 'a3', 'a2', 'a1', 'a0'],
      ['b3', 'b2', 'b1', 'b0'],
    ]);
    expect(first.communities[0]!.types).to.deep.equal([{ type: 'thing', count: 5 }]);
    expect(detectCommunities(nodes, links, { minSize: 3 })).to.deep.equal(first);
    expect(detectCommunities(nodes, [], { minSize: 3 }).communities).to.deep.equal([]);
  });

  it('matches a new community to the stored one it mostly continues (Jaccard ≥ 0.5), each once', () => {
    const { communities } = detectCommunities(nodes, links, { minSize: 3 });
    const keep = matchPrevious(communities, [
      { id: 'old-b', memberIds: ['b0', 'b1', 'b2'] },
      { id: 'old-a', memberIds: ['a0', 'a1', 'a2', 'a3', 'a4', 'x', 'y'] },
      { id: 'old-small', memberIds: ['a0'] },
    ]);
    expect(keep).to.deep.equal(['old-a', 'old-b']);
    expect(matchPrevious(communities, [{ id: 'far', memberIds: ['a0', 'q1', 'q2', 'q3', 'q4', 'q5'] }])).to.deep.equal([
      null,
      null,
    ]);
  });
});
