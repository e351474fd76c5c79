/**
 * Tool names as model and agent clients accept them. OpenAI function calling and several MCP
 * clients (Claude Desktop, Cursor) allow only `^[a-zA-Z0-9_-]{1,64}$`, so a capability's dotted
 * name travels with its dot turned into an underscore: `agent.claim_work` → `agent_claim_work`.
 * Capability names are `<area>.<verb>` with one dot and a dot-free area, so the mapping is
 * reversible; `wireNames` checks that it stays one-to-one for the registry it is given.
 */
export const WIRE_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

export const toWireName = (capabilityName: string): string => capabilityName.replace('.', '_');

/** The registry's names by wire name; throws when a name cannot travel or two collide. */
export function wireNames(capabilityNames: readonly string[]): ReadonlyMap<string, string> {
  const byWire = new Map<string, string>();
  for (const name of capabilityNames) {
    const wire = toWireName(name);
    if (!WIRE_NAME_PATTERN.test(wire)) throw new Error(`capability ${name} has no valid wire name (${wire})`);
    const taken = byWire.get(wire);
    if (taken) throw new Error(`capabilities ${taken} and ${name} share the wire name ${wire}`);
    byWire.set(wire, name);
  }
  return byWire;
}
