import { expect } from 'chai';
import { offlineOpenApiDocument } from '../../src/app/openapi';
import { toWireName, WIRE_NAME_PATTERN, wireNames } from '../../src/capabilities/wire-names';

describe('capability wire names (OpenAI functions, MCP tools)', () => {
  it('turn the dot into an underscore', () => {
    expect(toWireName('agent.claim_work')).to.equal('agent_claim_work');
    expect(toWireName('ontology.search')).to.equal('ontology_search');
  });

  it('map every registered capability one-to-one onto a name every client accepts', () => {
    const capabilityPaths = Object.keys(offlineOpenApiDocument().paths ?? {}).filter(
      (path) =>
        // `/v1/cap/{name}` is the door of the workspace's own tools (connectors), not a tool.
        path.startsWith('/v1/cap/') && path !== '/v1/cap/{name}',
    );
    const names = capabilityPaths.map((path) => path.slice('/v1/cap/'.length));
    expect(names.length).to.be.greaterThan(10);
    const byWire = wireNames(names);
    expect(byWire.size).to.equal(names.length);
    for (const [wire, name] of byWire) {
      expect(wire).to.match(WIRE_NAME_PATTERN);
      expect(byWire.get(toWireName(name))).to.equal(name);
    }
  });

  it('refuse names that would collide or could not travel', () => {
    expect(() => wireNames(['a.b_c', 'a_b.c'])).to.throw(/share the wire name a_b_c/);
    expect(() => wireNames(['area.has space'])).to.throw(/no valid wire name/);
  });
});
