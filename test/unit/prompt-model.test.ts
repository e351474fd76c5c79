import { expect } from 'chai';
import { answerLocally, classifyIntent, refineLocally } from '../../src/prompt/model/local';
import { questionWords } from '../../src/prompt/retrieval';
import { auditSummary, sourceHash } from '../../src/prompt/summary';

describe('prompt pipeline: the local model and audit rules (unit)', () => {
  it('classifies statements as update, questions as query, a mix as both', () => {
    expect(classifyIntent('Ada Lovelace wrote the first program.')).to.equal('update');
    expect(classifyIntent('Who wrote the first program?')).to.equal('query');
    expect(classifyIntent('list the people in the graph')).to.equal('query');
    expect(classifyIntent('Ada wrote a program. Who was her mentor?')).to.equal('both');
    expect(classifyIntent('# Team\n- Alan Turing joined Bletchley Park\n- Where is he now?')).to.equal('both');
  });

  it('refines statements into typed nodes and verb-named edges, with evidence', () => {
    const graph = refineLocally('Alan Turing joined Bletchley Park in 1939. Alan Turing lived in Wilmslow.');
    expect(graph.nodes.map((node) => [node.type, node.name])).to.deep.equal([
      ['person', 'Alan Turing'],
      ['organization', 'Bletchley Park'],
      ['place', 'Wilmslow'],
    ]);
    expect(graph.edges.map((edge) => edge.type)).to.deep.equal(['JOINED', 'LIVED_IN']);
    expect(graph.edges[0]!.evidence).to.equal('Alan Turing joined Bletchley Park in 1939.');
  });

  it('reads "key: value" lines as properties of the last subject, and e-mail addresses', () => {
    const graph = refineLocally(
      'Grace Hopper designed compilers, reach her at grace@navy.example.\n- rank: Rear Admiral',
    );
    const grace = graph.nodes.find((node) => node.name === 'Grace Hopper')!;
    expect(grace.properties).to.deep.equal({ email: 'grace@navy.example', rank: 'Rear Admiral' });
  });

  it('skips questions when refining', () => {
    expect(refineLocally('Who is Ada Lovelace?')).to.deep.equal({ nodes: [], edges: [] });
  });

  it('answers extractively, citing only the nodes it names', () => {
    const context = {
      nodes: [
        { id: 'a', type: 'person', name: 'Ada Lovelace', properties: {}, score: 1 },
        { id: 'b', type: 'person', name: 'Charles Babbage', properties: {}, score: 0.5 },
        { id: 'c', type: 'concept', name: 'Difference Engine', properties: {}, score: 0.1 },
      ],
      edges: [{ type: 'MENTORED', source_node_id: 'b', target_node_id: 'a' }],
    };
    const answer = answerLocally('Who mentored Ada?', context);
    expect(answer.answer).to.contain('Ada Lovelace (person)').and.contain('Charles Babbage mentored Ada Lovelace.');
    expect(answer.citations).to.have.members(['a', 'b']);
    expect(answerLocally('Anything?', { nodes: [], edges: [] })).to.deep.equal({
      answer: 'The graph holds nothing about this yet.',
      citations: [],
    });
  });

  it('keeps the meaningful words of a question for name matching', () => {
    expect(questionWords('Who is Charles Babbage and where did he work?')).to.deep.equal(['charles', 'babbage']);
  });

  it('audit summaries hold counts and an answer fragment, never more than 500 characters', () => {
    const summary = auditSummary({ intent: 'both', nodesCreated: 2, edgesCreated: 1, answer: 'x'.repeat(900) });
    expect(summary).to.match(/^both: 2 nodes and 1 edges created; answer: x+…$/);
    expect(summary).to.have.length(500);
    expect(auditSummary({ intent: 'query', nodesCreated: 0, edgesCreated: 0, error: 'UpstreamError' })).to.equal(
      'query: 0 nodes and 0 edges created; failed with UpstreamError',
    );
    expect(sourceHash('abc')).to.equal('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
